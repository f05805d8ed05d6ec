from django.db import models

from core.provenance import DEFAULT_AUTHOR, Provenance
from models_app.models import Project

PLAN_FILES = ("plan", "bim_supplement", "building")


class PlanVersion(models.Model):
    """The state of a project's three plan files after one write (a PUT of one file, or a delivery of all three).
    Versions are numbered per project, v1, v2, ...; a file's current content is its value in the newest version."""

    class Operation(models.TextChoices):
        PUT = "put"
        DELIVER = "deliver"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="plan_versions")
    number = models.PositiveIntegerField()
    changed = models.JSONField(help_text="names of the files this version wrote")
    plan = models.JSONField(null=True, blank=True)
    bim_supplement = models.JSONField(null=True, blank=True)
    building = models.JSONField(null=True, blank=True)
    author = models.CharField(max_length=255, default=DEFAULT_AUTHOR)
    provenance = models.CharField(max_length=2, choices=Provenance.choices, default=Provenance.UI)
    operation = models.CharField(max_length=8, choices=Operation.choices, default=Operation.PUT)
    note = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "number"]
        constraints = [models.UniqueConstraint(fields=["project", "number"], name="one_plan_version_per_number")]

    @property
    def label(self) -> str:
        return f"v{self.number}"

    def files(self) -> dict:
        return {name: getattr(self, name) for name in PLAN_FILES}

    def __str__(self):
        return f"{self.project_id} {self.label}"
