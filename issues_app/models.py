import secrets
import uuid

from django.db import models
from django.utils import timezone

from core.provenance import DEFAULT_AUTHOR, Provenance
from models_app.models import IfcModel

ISSUE_ID_PATTERN = r"i_[0-9a-f]{12}"
GUID_PATTERN = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
DEFAULT_TOPIC_TYPE = "Issue"
OVERRIDE_FIELDS = ("Name", "Description", "Classification", "FireRating", "Comments")


def new_issue_id() -> str:
    return "i_" + secrets.token_hex(6)


def new_change_id() -> str:
    return "c_" + secrets.token_hex(6)


class Issue(models.Model):
    """A review issue pinned to an element of a model, with an optional PNG screenshot."""

    class Status(models.TextChoices):
        OPEN = "open"
        CHECKING = "checking"
        RESOLVED = "resolved"

    id = models.CharField(primary_key=True, max_length=14, default=new_issue_id, editable=False)
    model = models.ForeignKey(IfcModel, on_delete=models.CASCADE, related_name="issues")
    entity_id = models.CharField(max_length=64, blank=True, default="", db_index=True)
    entity_name = models.CharField(max_length=512, blank=True, default="")
    entity_type = models.CharField(max_length=128, blank=True, default="")
    title = models.CharField(max_length=512)
    comment = models.TextField(blank=True, default="")
    author = models.CharField(max_length=255, default=DEFAULT_AUTHOR)
    author_verified = models.BooleanField(default=False, help_text="the author is an account's username (else self-declared)")
    provenance = models.CharField(max_length=2, choices=Provenance.choices, default=Provenance.UI)
    camera = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN, db_index=True)
    screenshot = models.CharField(max_length=64, blank=True, default="")
    bcf_topic_guid = models.CharField(max_length=64, blank=True, default="", db_index=True, help_text="its BCF topic GUID: imported, or derived from model and issue id")
    # BCF topic fields
    topic_type = models.CharField(max_length=255, default=DEFAULT_TOPIC_TYPE)
    priority = models.CharField(max_length=255, blank=True, default="", db_index=True)
    labels = models.JSONField(default=list, blank=True)
    assigned_to = models.CharField(max_length=255, blank=True, default="", db_index=True)
    assigned_to_member = models.BooleanField(default=False, help_text="assigned_to was a member's username when assigned (else free text)")
    due_date = models.DateTimeField(null=True, blank=True)
    stage = models.CharField(max_length=255, blank=True, default="")
    reference_links = models.JSONField(default=list, blank=True)
    related_topics = models.JSONField(default=list, blank=True, help_text="BCF topic GUIDs")
    document_references = models.JSONField(default=list, blank=True)
    modified_author = models.CharField(max_length=255, blank=True, default="")
    modified_author_verified = models.BooleanField(default=False)
    modified_at = models.DateTimeField(null=True, blank=True, help_text="last change of the topic or its comments (BCF ModifiedDate)")
    viewpoints = models.JSONField(default=list, blank=True, help_text="BCF-API 3.0 viewpoints, snapshots as URLs")
    bcf_topic_status = models.CharField(max_length=255, blank=True, default="", help_text="the TopicStatus it was imported with (exported again while it maps to the status)")
    bcf_header_files = models.JSONField(default=list, blank=True, help_text="external model files of the BCF markup header")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.title} ({self.id})"


def new_guid() -> str:
    return str(uuid.uuid4())


class Comment(models.Model):
    """One comment of an issue's thread (a BCF Comment); `guid` is its id in the API and in BCF."""

    issue = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="comments")
    guid = models.CharField(max_length=36, default=new_guid, editable=False)
    author = models.CharField(max_length=255, default=DEFAULT_AUTHOR)
    author_verified = models.BooleanField(default=False, help_text="the author is an account's username (else self-declared)")
    date = models.DateTimeField(default=timezone.now)
    text = models.TextField(blank=True, default="")
    viewpoint_guid = models.CharField(max_length=36, blank=True, default="", help_text="a viewpoint of the issue")
    modified_date = models.DateTimeField(null=True, blank=True)
    modified_author = models.CharField(max_length=255, blank=True, default="")
    modified_author_verified = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issue", "guid"], name="one_comment_guid_per_issue")]
        ordering = ["date", "id"]

    def __str__(self):
        return f"{self.author}: {self.text[:60]}"


class Override(models.Model):
    """One whitelisted property value overriding the IFC's value for one element, without touching the IFC."""

    model = models.ForeignKey(IfcModel, on_delete=models.CASCADE, related_name="overrides")
    entity_id = models.CharField(max_length=64)
    entity_name = models.CharField(max_length=512, blank=True, default="")
    field = models.CharField(max_length=32, choices=[(f, f) for f in OVERRIDE_FIELDS])
    value = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["model", "entity_id", "field"], name="one_override_per_field")]
        ordering = ["entity_id", "field"]

    def __str__(self):
        return f"{self.entity_id}.{self.field} = {self.value}"


class ChangeEntry(models.Model):
    """The model's change log: one entry per changed field (history, never edited)."""

    class Operation(models.TextChoices):
        UPDATE = "update"
        MIGRATE = "migrate"

    seq = models.BigAutoField(primary_key=True)  # total order of writes, also between equal timestamps
    id = models.CharField(unique=True, max_length=14, default=new_change_id, editable=False)
    # the change log outlives the model: purging it from the trash leaves model_id as a plain value
    model = models.ForeignKey(IfcModel, on_delete=models.DO_NOTHING, db_constraint=False, related_name="changes")
    entity_id = models.CharField(max_length=64, db_index=True)
    entity_name = models.CharField(max_length=512, blank=True, default="")
    field = models.CharField(max_length=255)
    old_value = models.TextField(blank=True, default="")
    new_value = models.TextField(blank=True, default="")
    author = models.CharField(max_length=255, default=DEFAULT_AUTHOR)
    author_verified = models.BooleanField(default=False, help_text="the author is an account's username (else self-declared)")
    provenance = models.CharField(max_length=2, choices=Provenance.choices, default=Provenance.UI)
    operation = models.CharField(max_length=8, choices=Operation.choices, default=Operation.UPDATE)
    diff = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-seq"]
        verbose_name_plural = "change entries"

    def __str__(self):
        return f"{self.entity_id}.{self.field}: {self.old_value!r} -> {self.new_value!r}"


class OverrideMigration(models.Model):
    """A running overrides migration of a model: one at a time, across gateway processes."""

    model = models.OneToOneField(IfcModel, primary_key=True, on_delete=models.CASCADE, related_name="override_migration")
    started_at = models.DateTimeField(auto_now_add=True)
