import secrets

from django.conf import settings
from django.db import models

from core.jobs.models import JobState

MODEL_ID_PATTERN = r"m_[0-9a-f]{16}"


class OutsideTrashManager(models.Manager):
    """The default manager of records that can be in the trash: every read of the apps sees only those outside it.
    Related-object access and cascades use the plain base manager; the trash itself reads `with_trashed`."""

    def get_queryset(self):
        return super().get_queryset().filter(deleted_at__isnull=True)


def new_model_id() -> str:
    return "m_" + secrets.token_hex(8)


class IfcModel(models.Model):
    """An uploaded (or script-generated) building model and the state of its XKT conversion."""

    class Status(models.TextChoices):
        CONVERTING = "converting"
        READY = "ready"
        FAILED = "failed"

    class Job(models.TextChoices):
        IDLE = "idle"
        QUEUED = "queued"
        RUNNING = "running"

    id = models.CharField(primary_key=True, max_length=18, default=new_model_id, editable=False)
    name = models.CharField(max_length=255)
    size = models.BigIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CONVERTING, db_index=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Conversion bookkeeping (a core.jobs job whose state field is `job` and worker field `job_worker`): `revision`
    # grows with every conversion request; a run converts the revision it saw at its start and runs again when a
    # newer one arrived meanwhile; `attempts` counts the runs of the queued job, bounding the re-runs of a
    # conversion whose worker keeps dying.
    revision = models.PositiveIntegerField(default=0)
    job = models.CharField(max_length=8, choices=Job.choices, default=Job.IDLE)
    job_worker = models.CharField(max_length=128, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    progress_phase = models.CharField(max_length=32, blank=True, default="")
    progress_percent = models.PositiveSmallIntegerField(default=0)
    # file_signature() of the model.ifc the published outputs were made from; another value on disk means the edit
    # service replaced the IFC without the gateway knowing, and it is converted again.
    class Format(models.TextChoices):
        IFC = "ifc", "IFC model"
        DXF = "dxf", "DXF drawing"

    format = models.CharField(max_length=8, choices=Format.choices, default=Format.IFC,
                              help_text="dxf: a drawing built by a dxf_lib script, previewed through render.json, never converted")
    converted_ifc = models.CharField(max_length=80, blank=True, default="")
    # who uploaded it (or whose agent built it): a model outside any project is its uploader's (accounts_app.policy)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # set while the model is in the trash (its folder then lies under {dataDir}/trash/models/)
    deleted_at = models.DateTimeField(null=True, blank=True, db_index=True)

    objects = OutsideTrashManager()
    with_trashed = models.Manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "model"

    def __str__(self):
        return f"{self.name} ({self.id})"


PROJECT_ID_PATTERN = r"p_[0-9a-f]{16}"


def new_project_id() -> str:
    return "p_" + secrets.token_hex(8)


class Project(models.Model):
    """A group of models worked on together: an ifc project holds its IFC model, a cad project its drawing, a
    cad->ifc project the drawing and the IFC model built from it. Plan files and the chat session hang off it."""

    class Kind(models.TextChoices):
        IFC = "ifc"
        CAD = "cad"
        CAD_TO_IFC = "cad->ifc"

    id = models.CharField(primary_key=True, max_length=18, default=new_project_id, editable=False)
    title = models.CharField(max_length=255)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # A deleted model leaves its project with it (the link row cascades away).
    ifc_models = models.ManyToManyField(IfcModel, through="ProjectModel", related_name="projects", blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True, db_index=True)  # set while the project is in the trash

    objects = OutsideTrashManager()
    with_trashed = models.Manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.title} ({self.id})"


class OfModelsOutsideTrashManager(models.Manager):
    """The default manager of records hanging off a model (`model` field): those of models outside the trash. A
    trashed model has left its project (the link row stays for its restore); its queued version conversions neither
    run nor are re-queued."""

    def get_queryset(self):
        return super().get_queryset().filter(model__deleted_at__isnull=True)


class ProjectModel(models.Model):
    """A model's membership of its project (a model belongs to at most one); ids keep the order models were added."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE)
    model = models.OneToOneField(IfcModel, on_delete=models.CASCADE, related_name="project_link")
    discipline = models.CharField(max_length=32, blank=True, default="", help_text="free text, e.g. ARC, STR, MEP; empty when not given")

    objects = OfModelsOutsideTrashManager()
    with_trashed = models.Manager()

    class Meta:
        ordering = ["id"]


VERSION_PATTERN = r"v[1-9]\d{0,8}"


class VersionGeometry(JobState):
    """The XKT and metadata.json of one saved version of a model, converted on request (a version diff draws the
    elements removed since that version from them). Versions never change, so a ready one is never converted again."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        CONVERTING = "converting"
        READY = "ready"
        FAILED = "failed"

    model = models.ForeignKey(IfcModel, on_delete=models.CASCADE, related_name="version_geometries")
    class Source(models.TextChoices):
        SCRIPT = "script"
        REVISION = "revision"

    version = models.CharField(max_length=12, help_text="a saved version v<n>")
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.SCRIPT,
                              help_text="what v<n> named when converted: a script's saved version or an uploaded revision (a script "
                                        "taking over an uploaded model renumbers its versions, so the other source's geometry is stale)")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = OfModelsOutsideTrashManager()
    with_trashed = models.Manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["model", "version"], name="one_geometry_per_model_version")]
        ordering = ["model", "created_at"]
        verbose_name = "version geometry"
        verbose_name_plural = "version geometries"

    def __str__(self):
        return f"{self.model_id} {self.version} ({self.status})"


class ModelRevision(models.Model):
    """One uploaded IFC of an uploaded model (not one built by a script): v1 its first upload, v2, v3, ... each new
    revision (POST /models/{id}/revisions). Every revision's file stays as revisions/v<n>.ifc in the model's folder;
    the latest is also its model.ifc. Recorded once the model gets its second revision (v1 from the model then).
    Not IfcModel.revision, which counts conversion requests."""

    model = models.ForeignKey(IfcModel, on_delete=models.CASCADE, related_name="uploaded_revisions")
    number = models.PositiveIntegerField(help_text="n of the version v<n>, append-only")
    name = models.CharField(max_length=255, help_text="the uploaded file's original name")
    size = models.BigIntegerField(help_text="bytes")
    uploaded_at = models.DateTimeField()
    author = models.CharField(max_length=255, blank=True, default="", help_text="who uploaded it (api-token, an admin user, local-user); empty when unknown")

    objects = OfModelsOutsideTrashManager()
    with_trashed = models.Manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["model", "number"], name="one_revision_per_model_number")]
        ordering = ["model", "number"]
        verbose_name = "model revision"

    def __str__(self):
        return f"{self.model_id} {self.version} ({self.name})"

    @property
    def version(self) -> str:
        return f"v{self.number}"


class Deletion(models.Model):
    """The record of one deletion through the API or the admin: what went to the trash, when, by whom, and what
    became of it (restored, purged). Kept for good, also after the purge."""

    class Kind(models.TextChoices):
        MODEL = "model"
        PROJECT = "project"

    kind = models.CharField(max_length=8, choices=Kind.choices)
    target_id = models.CharField(max_length=18, db_index=True, help_text="the model or project id (the trash item's id)")
    title = models.CharField(max_length=255, help_text="the model's name or the project's title")
    model_ids = models.JSONField(default=list, blank=True, help_text="the models that went to the trash with it (a project's)")
    deleted_at = models.DateTimeField(db_index=True)
    deleted_by = models.CharField(max_length=255, help_text="the authenticated principal: api-token, an admin user, local-user when authentication is off")
    client_address = models.CharField(max_length=64, blank=True, default="")
    purge_at = models.DateTimeField(db_index=True)
    restored_at = models.DateTimeField(null=True, blank=True)
    restored_by = models.CharField(max_length=255, blank=True, default="")
    purged_at = models.DateTimeField(null=True, blank=True)
    purged_by = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        ordering = ["-deleted_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["target_id"], condition=models.Q(restored_at__isnull=True, purged_at__isnull=True),
                                    name="one_open_deletion_per_target"),
        ]

    def __str__(self):
        return f"{self.kind} {self.target_id} deleted by {self.deleted_by} at {self.deleted_at:%Y-%m-%d %H:%M}"

    @property
    def in_trash(self) -> bool:
        return self.restored_at is None and self.purged_at is None


class TrashItem(Deletion):
    """The deletions still in the trash (the admin's Trash)."""

    class Meta:
        proxy = True
        verbose_name = "trash item"
