"""Clash tests of a project, their runs (core.jobs jobs on the clashes queue), and clashes kept as one record each
through their whole life, with what every run saw of them (ClashSighting)."""

from __future__ import annotations

import hashlib
import secrets

from django.db import models

from core.jobs.models import JobState

# test names: letters, digits, '.', '_', '-'; starting with a letter or digit, at most 64: safe in URLs as they are
TEST_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
RUN_ID_PATTERN = r"r_[0-9a-f]{16}"
CLASH_ID_PATTERN = r"c_[0-9a-f]{16}"


def new_run_id() -> str:
    return "r_" + secrets.token_hex(8)


def clash_id_of(project_id: str, test_name: str, guid_a: str, guid_b: str) -> str:
    """The stable id of a clash: the test (project and name) and the two GlobalIds, in either order."""
    first, second = sorted((guid_a, guid_b))
    return "c_" + hashlib.sha256("\n".join((project_id, test_name, first, second)).encode()).hexdigest()[:16]


class ClashTest(models.Model):
    """A named clash test of a project: set A against set B (or A against itself), a kind and its thresholds."""

    class Kind(models.TextChoices):
        HARD = "hard"
        CLEARANCE = "clearance"
        DUPLICATE = "duplicate"

    project = models.ForeignKey("models_app.Project", on_delete=models.CASCADE, related_name="clash_tests")
    name = models.CharField(max_length=64)
    a = models.JSONField(help_text="{models: [model ids], classes: [IFC classes] | null, exclude: [IFC classes]}")
    b = models.JSONField(null=True, blank=True, help_text="as a; null: A against itself")
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.HARD)
    tolerance = models.FloatField(default=0.01, help_text="metres: overlaps up to this depth are not clashes")
    distance = models.FloatField(default=0.0, help_text="metres: the clearance a clearance test asks for")
    automatic = models.BooleanField(default=False, help_text="runs again whenever one of its models gets a new ready version")
    created_by = models.CharField(max_length=150, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="one_clash_test_per_name")]
        ordering = ["name"]

    def __str__(self):
        return f"{self.project_id}/{self.name}"

    def model_ids(self) -> list[str]:
        """Every model the test names, set A's first, each once."""
        ids = [*self.a.get("models", []), *((self.b or {}).get("models", []))]
        return list(dict.fromkeys(ids))


class ClashRun(JobState):
    """One run of a clash test over the models' versions of that moment (a core.jobs job, kind "clash_run")."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Trigger(models.TextChoices):
        USER = "user"
        AUTOMATIC = "automatic"
        AGENT = "agent"

    id = models.CharField(primary_key=True, max_length=18, default=new_run_id, editable=False)
    test = models.ForeignKey(ClashTest, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    model_versions = models.JSONField(default=list, help_text="[{modelId, version}] the run used")
    summary = models.JSONField(null=True, blank=True, help_text="{new, active, resolved, missing, approved, total}")
    error = models.TextField(blank=True, default="")
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.USER)
    requested_by = models.CharField(max_length=150, blank=True, default="")
    staged = models.BooleanField(default=False, help_text="run on the working (staged) product: it changes no clash's status")
    cancel_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.id} of {self.test} ({self.status})"


class Clash(models.Model):
    """A clash of a test, one record through its whole life: the facts of its two elements, its status as of the
    last (not staged) run that saw it or let it go, and what reviewers said of it."""

    class Status(models.TextChoices):
        NEW = "new"
        ACTIVE = "active"
        RESOLVED = "resolved"
        MISSING = "missing"

    class Review(models.TextChoices):
        NONE = "", "none"
        REVIEWED = "reviewed"
        APPROVED = "approved"

    id = models.CharField(primary_key=True, max_length=18, editable=False)
    test = models.ForeignKey(ClashTest, on_delete=models.CASCADE, related_name="clashes")
    a = models.JSONField(help_text="{modelId, guid, type, name, storey}")
    b = models.JSONField(help_text="{modelId, guid, type, name, storey}")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.NEW, db_index=True)
    review_status = models.CharField(max_length=10, choices=Review.choices, blank=True, default="")
    assigned_to = models.CharField(max_length=150, blank=True, default="")
    first_run = models.ForeignKey(ClashRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_run = models.ForeignKey(ClashRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    point = models.JSONField(default=list)
    depth = models.FloatField(null=True, blank=True)
    distance = models.FloatField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "clashes"

    def __str__(self):
        return f"{self.id} {self.a.get('guid')} x {self.b.get('guid')} ({self.status})"


class ClashSighting(models.Model):
    """What one run saw of a clash: present (new, active) or let go (resolved, missing), where and how deep."""

    run = models.ForeignKey(ClashRun, on_delete=models.CASCADE, related_name="sightings")
    clash = models.ForeignKey(Clash, on_delete=models.CASCADE, related_name="sightings")
    status = models.CharField(max_length=10, choices=Clash.Status.choices)
    point = models.JSONField(default=list)
    depth = models.FloatField(null=True, blank=True)
    distance = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "clash"], name="one_sighting_per_run_and_clash")]
        ordering = ["id"]

    def __str__(self):
        return f"{self.clash_id} in {self.run_id}: {self.status}"


PRESENT = (Clash.Status.NEW, Clash.Status.ACTIVE)

from coordination_app.issue_models import ClashIssue  # noqa: E402,F401 - H5's link model, registered with the app's models
