import secrets

from django.db import models

from core.jobs.models import JobState

from issues_app.models import Issue
from models_app.models import IfcModel

CHECK_ID_PATTERN = r"chk_[0-9a-f]{16}"
# IDS file names of a project: letters, digits, dot, underscore, hyphen; starting with a letter or digit, at most 100
# characters, no "..": safe in URLs and file names as they are.
IDS_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"
# pinning a check's failures as issues: one issue per failing specification (default) or per failing element, the
# latter confirmed by the caller above PIN_CONFIRM_ABOVE new issues
PER_SPECIFICATION, PER_ELEMENT = "specification", "element"
PIN_MODES = (PER_SPECIFICATION, PER_ELEMENT)
PIN_CONFIRM_ABOVE = 25


def new_check_id() -> str:
    return "chk_" + secrets.token_hex(8)


class IdsDocument(models.Model):
    """The content of an IDS file, stored once per content (sha256): project files and the IDS of checks point here,
    so a check keeps the exact IDS it ran with even when the project's file is replaced or deleted."""

    sha256 = models.CharField(primary_key=True, max_length=64)
    content = models.TextField()
    size = models.PositiveIntegerField()
    title = models.CharField(max_length=512, blank=True, default="")
    specifications = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "IDS document"

    def __str__(self):
        return f"{self.title or 'untitled'} ({self.sha256[:12]})"


class IdsFile(models.Model):
    """A named IDS file of a project (PUT /api/v1/projects/{projectId}/ids/{name})."""

    # The one reference to the project model (chat_app today); repointed when Project moves.
    project = models.ForeignKey("models_app.Project", on_delete=models.CASCADE, related_name="ids_files")
    name = models.CharField(max_length=100)
    document = models.ForeignKey(IdsDocument, on_delete=models.PROTECT, related_name="files")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="one_ids_file_per_name")]
        ordering = ["name"]
        verbose_name = "IDS file"

    def __str__(self):
        return f"{self.project_id}/{self.name}"


class Check(JobState):
    """One check of a model version against IDS documents. Same model + product + IDS contents (+ overrides, when
    included) = same cache_key = same result: such a request is answered by the existing check."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    id = models.CharField(primary_key=True, max_length=20, default=new_check_id, editable=False)
    model = models.ForeignKey(IfcModel, on_delete=models.CASCADE, related_name="ids_checks")
    version = models.CharField(max_length=16, help_text='"current" (the working product model.ifc) or a saved version v<n>')
    product_key = models.CharField(max_length=128, help_text="current: signature of the model.ifc checked; a version: its name")
    ids = models.JSONField(help_text="[{name, sha256}] in the order checked")
    documents = models.ManyToManyField(IdsDocument, related_name="checks", help_text="keeps the checked IDS contents")
    include_overrides = models.BooleanField(default=False)
    overrides = models.JSONField(null=True, blank=True, help_text="the effective overrides applied, when included")
    cache_key = models.CharField(max_length=64, db_index=True)
    requester = models.CharField(
        max_length=128, db_index=True, help_text="whose turn the check takes in the fair queue: the model id (the user, once there are accounts)"
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED, db_index=True)
    error = models.TextField(blank=True, default="")
    failed_under_limits = models.CharField(
        max_length=64, blank=True, default="",
        help_text="a failure the same request would meet again (time limit, memory cap, an IDS pattern the engine cannot run): "
                  "the limits it failed under; the same request under the same limits is answered by this check",
    )
    summary = models.JSONField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "IDS check"

    def __str__(self):
        return f"{self.id} of {self.model_id} {self.version} ({self.status})"


class PinnedFailure(models.Model):
    """The review issue pinned for a failing (IDS file, specification, element) of a model: re-checks update it
    instead of pinning a second one. Deleting the issue deletes the link (a later pin creates a new issue)."""

    model = models.ForeignKey(IfcModel, on_delete=models.CASCADE, related_name="pinned_failures")
    ids_name = models.CharField(max_length=100)
    specification = models.CharField(max_length=255)
    guid = models.CharField(max_length=64)
    issue = models.OneToOneField(Issue, on_delete=models.CASCADE, related_name="ids_failure")
    last_check = models.ForeignKey(Check, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["model", "ids_name", "specification", "guid"], name="one_issue_per_failure")]

    def __str__(self):
        return f"{self.ids_name} / {self.specification} / {self.guid} -> {self.issue_id}"
