import secrets

from django.db import models

MODEL_ID_PATTERN = r"m_[0-9a-f]{16}"


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

    # Conversion bookkeeping: `revision` grows with every conversion request; a run converts the revision it saw
    # at its start and runs again when a newer one arrived meanwhile.
    revision = models.PositiveIntegerField(default=0)
    job = models.CharField(max_length=8, choices=Job.choices, default=Job.IDLE)
    job_worker = models.CharField(max_length=128, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
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

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "model"

    def __str__(self):
        return f"{self.name} ({self.id})"
