import uuid

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.fields import AuthorField, ProvenanceField
from issues_app.models import DEFAULT_TOPIC_TYPE, OVERRIDE_FIELDS, ChangeEntry, Comment, Issue
from issues_app.viewpoints import GUID_RE, ViewpointError, clean_viewpoints
from api.fields import StrictCharField

MAX_LIST_ITEMS = 1000
AUTHOR_VERIFIED_HELP = "true: author is the username of the account that wrote it (a self-declared author was ignored); false: self-declared"
SIGNED_KEYS = {"authorVerified", "modifiedAuthorVerified"}


class StrictNumberField(serializers.FloatField):
    """A finite JSON number (not a numeric string, not a boolean)."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        value = super().to_internal_value(data)
        if value != value or value in (float("inf"), float("-inf")):
            self.fail("invalid")
        return value


def vector():
    return serializers.ListField(child=StrictNumberField(), min_length=1, max_length=16)


class CameraSerializer(serializers.Serializer):
    eye = vector()
    look = vector()
    up = vector()


class GuidField(StrictCharField):
    """A lowercase UUID (8-4-4-4-12 hex digits), as BCF writes GUIDs."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not GUID_RE.match(value):
            raise serializers.ValidationError(f"{value!r} is not a lowercase UUID (8-4-4-4-12 hex digits)")
        return value


def text_list(max_length: int = 255, **kwargs):
    return serializers.ListField(child=StrictCharField(max_length=max_length), max_length=MAX_LIST_ITEMS, **kwargs)


class DocumentReferenceSerializer(serializers.Serializer):
    """A BCF DocumentReference: a URL, or the GUID of a document stored with the model (from an imported archive)."""

    guid = GuidField(required=False)
    url = StrictCharField(required=False, allow_null=True, max_length=2048)
    documentGuid = GuidField(required=False, allow_null=True)
    description = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=2048)
    filename = StrictCharField(required=False, allow_null=True, max_length=1024, help_text="read from the archive's documents.xml")
    documentDescription = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=2048)

    def validate(self, attrs):
        if bool(attrs.get("url")) == bool(attrs.get("documentGuid")):
            raise serializers.ValidationError("a document reference needs either url or documentGuid")
        return {
            "guid": attrs.get("guid") or str(uuid.uuid4()), "url": attrs.get("url") or None, "documentGuid": attrs.get("documentGuid") or None,
            "description": attrs.get("description") or None, "filename": attrs.get("filename") or None,
            "documentDescription": attrs.get("documentDescription") or None,
        }


VIEWPOINTS_HELP = (
    "BCF-API 3.0 viewpoints (xeokit BCFViewpointsPlugin getViewpoint()/setViewpoint()); images as snapshot_data/bitmap_data "
    "(base64 or a data: URL, PNG or JPEG, at most 5 MB) or snapshot_url/bitmap_url of an image the issue has"
)


@extend_schema_field({"type": "array", "items": {"type": "object"}, "description": VIEWPOINTS_HELP})
class ViewpointsField(serializers.Field):
    """Checked by issues_app.viewpoints; the context's `kept_urls` are the images the issue has."""

    def to_internal_value(self, data):
        try:
            return clean_viewpoints(data, kept_urls=self.context.get("kept_urls", set()), new_guid=lambda: str(uuid.uuid4()))
        except ViewpointError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def to_representation(self, value):
        return value


class TopicFieldsSerializer(serializers.Serializer):
    """The BCF topic fields of an issue (POST issues and PATCH)."""

    topicType = StrictCharField(required=False, max_length=255)
    priority = StrictCharField(required=False, allow_blank=True, max_length=255)
    labels = text_list(required=False)
    assignedTo = StrictCharField(required=False, allow_blank=True, max_length=255)
    dueDate = serializers.DateTimeField(required=False, allow_null=True)
    stage = StrictCharField(required=False, allow_blank=True, max_length=255)
    referenceLinks = text_list(2048, required=False)
    relatedTopics = serializers.ListField(child=GuidField(), max_length=MAX_LIST_ITEMS, required=False, help_text="BCF topic GUIDs (see topicGuid)")
    documentReferences = serializers.ListField(child=DocumentReferenceSerializer(), max_length=100, required=False)
    viewpoints = ViewpointsField(required=False, help_text=VIEWPOINTS_HELP)


class IssueInputSerializer(TopicFieldsSerializer):
    """The JSON `issue` part of POST issues."""

    entityId = StrictCharField(required=False, allow_blank=True, max_length=64, default="")
    entityName = StrictCharField(required=False, allow_blank=True, max_length=512, default="")
    entityType = StrictCharField(required=False, allow_blank=True, max_length=128, default="")
    title = StrictCharField(max_length=512)
    comment = StrictCharField(required=False, allow_blank=True, default="")
    author = AuthorField()
    provenance = ProvenanceField()
    camera = CameraSerializer(required=False, allow_null=True, default=None)

    def validate(self, attrs):
        attrs.setdefault("topicType", DEFAULT_TOPIC_TYPE)
        return attrs


class IssueCreateSerializer(serializers.Serializer):
    """Multipart form of POST issues (documentation only; the view validates the parts)."""

    issue = serializers.CharField(help_text="JSON string (a plain field or a file part): " + ", ".join(IssueInputSerializer().fields))
    screenshot = serializers.FileField(required=False, help_text="PNG, at most 5 MB")


class IssueSerializer(serializers.Serializer):
    """An issue as the API shows it (selectors.issue_list_json writes the same fields for the list, faster)."""

    id = serializers.CharField()
    entityId = serializers.CharField(source="entity_id")
    entityName = serializers.CharField(source="entity_name")
    entityType = serializers.CharField(source="entity_type")
    title = serializers.CharField()
    comment = serializers.CharField()
    author = serializers.CharField()
    provenance = ProvenanceField(read_only=True)
    camera = CameraSerializer(allow_null=True)
    status = serializers.ChoiceField(choices=Issue.Status.choices)
    screenshot = serializers.CharField(help_text="relative path of the PNG, empty when none")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")
    topicGuid = serializers.CharField(source="bcf_topic_guid", help_text="the issue's BCF topic GUID (imported, or derived from model and issue)")
    topicType = serializers.CharField(source="topic_type")
    priority = serializers.CharField()
    labels = serializers.ListField(child=serializers.CharField())
    assignedTo = serializers.CharField(source="assigned_to")
    dueDate = serializers.DateTimeField(source="due_date", allow_null=True)
    stage = serializers.CharField()
    referenceLinks = serializers.ListField(child=serializers.CharField(), source="reference_links")
    relatedTopics = serializers.ListField(child=serializers.CharField(), source="related_topics", help_text="BCF topic GUIDs")
    documentReferences = serializers.JSONField(source="document_references", help_text="[{guid, url, documentGuid, description, filename, documentDescription}]")
    creationAuthor = serializers.CharField(source="author", help_text="BCF CreationAuthor (the same as author)")
    modifiedAuthor = serializers.CharField(source="modified_author", help_text="who changed the topic last, empty when never changed")
    modifiedAt = serializers.DateTimeField(source="modified_at", allow_null=True, help_text="last change of the topic or its comments, null when never changed")
    viewpoints = ViewpointsField(help_text="BCF-API 3.0 viewpoints; snapshot {snapshot_type, snapshot_url}, bitmaps with bitmap_url")
    authorVerified = serializers.BooleanField(source="author_verified", help_text=AUTHOR_VERIFIED_HELP)
    modifiedAuthorVerified = serializers.BooleanField(source="modified_author_verified", help_text="the same for modifiedAuthor")
    assignedToMember = serializers.BooleanField(source="assigned_to_member", help_text="assignedTo is a member's username (false: free text)")


class KnownKeysSerializer(serializers.Serializer):
    """Refuses keys that are neither fields nor the record's read-only keys (a client may echo what it read)."""

    read_only_keys: set[str] = set()

    def validate(self, attrs):
        unknown = sorted(set(self.initial_data) - set(self.fields) - self.read_only_keys)
        if unknown:
            raise serializers.ValidationError(f"unknown field(s) {', '.join(unknown)}; changeable: {', '.join(self.fields)}")
        return attrs


class IssuePatchSerializer(KnownKeysSerializer, TopicFieldsSerializer):
    read_only_keys = {
        "id", "entityId", "entityName", "entityType", "author", "provenance", "camera", "screenshot", "createdAt", "updatedAt",
        "topicGuid", "creationAuthor", "modifiedAt", "assignedToMember", *SIGNED_KEYS,
    }

    title = StrictCharField(required=False, max_length=512)
    comment = StrictCharField(required=False, allow_blank=True)
    status = serializers.ChoiceField(required=False, choices=Issue.Status.choices)
    modifiedAuthor = AuthorField(help_text="who makes this change (default local-user)")


class IssueFilterSerializer(serializers.Serializer):
    """Query parameters of GET issues; every one given must match."""

    status = serializers.ChoiceField(required=False, choices=Issue.Status.choices)
    priority = serializers.CharField(required=False, allow_blank=True, max_length=255)
    assignedTo = serializers.CharField(required=False, allow_blank=True, max_length=255)
    label = serializers.CharField(required=False, max_length=255, help_text="one of the issue's labels")
    topicType = serializers.CharField(required=False, max_length=255)
    stage = serializers.CharField(required=False, allow_blank=True, max_length=255)
    entityId = serializers.CharField(required=False, max_length=64)
    q = serializers.CharField(required=False, max_length=255, help_text="text in title, comment, entityName or id (case-insensitive)")


class CommentSerializer(serializers.Serializer):
    id = serializers.CharField(source="guid", help_text="the comment's GUID (lowercase UUID), also its BCF Comment Guid")
    author = serializers.CharField()
    date = serializers.DateTimeField()
    text = serializers.CharField()
    viewpointGuid = serializers.SerializerMethodField(help_text="a viewpoint of the issue, null when none")
    modifiedDate = serializers.DateTimeField(source="modified_date", allow_null=True)
    modifiedAuthor = serializers.CharField(source="modified_author", help_text="empty when never modified")
    authorVerified = serializers.BooleanField(source="author_verified", help_text=AUTHOR_VERIFIED_HELP)
    modifiedAuthorVerified = serializers.BooleanField(source="modified_author_verified", help_text="the same for modifiedAuthor")

    def get_viewpointGuid(self, comment: Comment) -> str | None:
        return comment.viewpoint_guid or None


COMMENT_READ_ONLY_KEYS = {"id", "date", "modifiedDate", *SIGNED_KEYS}


class CommentInputSerializer(KnownKeysSerializer):
    read_only_keys = COMMENT_READ_ONLY_KEYS | {"modifiedAuthor"}

    text = StrictCharField(trim_whitespace=False)
    author = AuthorField()
    viewpointGuid = GuidField(required=False, allow_null=True, allow_blank=True)


class CommentPatchSerializer(KnownKeysSerializer):
    read_only_keys = COMMENT_READ_ONLY_KEYS | {"author"}

    text = StrictCharField(required=False, trim_whitespace=False)
    viewpointGuid = GuidField(required=False, allow_null=True, allow_blank=True)
    modifiedAuthor = AuthorField(help_text="who makes this change (default local-user)")


class PropertiesUpdateSerializer(serializers.Serializer):
    entityName = StrictCharField(required=False, allow_blank=True, max_length=512, default="")
    fields = serializers.DictField(child=StrictCharField(allow_blank=True, trim_whitespace=False), allow_empty=False)
    author = AuthorField()
    provenance = ProvenanceField()

    def validate_fields(self, value):
        unknown = sorted(set(value) - set(OVERRIDE_FIELDS))
        if unknown:
            raise serializers.ValidationError(f"outside the whitelist: {', '.join(unknown)} (allowed: {', '.join(OVERRIDE_FIELDS)})")
        return value


class ChangeEntrySerializer(serializers.ModelSerializer):
    entityId = serializers.CharField(source="entity_id")
    entityName = serializers.CharField(source="entity_name")
    oldValue = serializers.CharField(source="old_value")
    newValue = serializers.CharField(source="new_value")
    provenance = ProvenanceField(read_only=True)
    createdAt = serializers.DateTimeField(source="created_at")
    authorVerified = serializers.BooleanField(source="author_verified", help_text=AUTHOR_VERIFIED_HELP)

    class Meta:
        model = ChangeEntry
        fields = ["id", "entityId", "entityName", "field", "oldValue", "newValue", "author", "provenance", "operation", "diff", "createdAt", "authorVerified"]


class MigrateRequestSerializer(serializers.Serializer):
    author = AuthorField()
    provenance = ProvenanceField()


class MigratedFieldSerializer(serializers.Serializer):
    entityId = serializers.CharField()
    field = serializers.CharField()
    value = serializers.CharField()


class FailedFieldSerializer(MigratedFieldSerializer):
    reason = serializers.CharField()


class MigrateResultSerializer(serializers.Serializer):
    migrated = MigratedFieldSerializer(many=True, help_text="fields now written by the build script (override removed unless changed meanwhile)")
    failed = FailedFieldSerializer(many=True, help_text="fields that keep their override, with the reason")
    version = serializers.CharField(allow_null=True, help_text="the version saved by the migration, null when none")



class BcfImportSerializer(serializers.Serializer):
    """Multipart form of POST issues/bcf (documentation only)."""

    file = serializers.FileField(help_text="a BCF 3.0 archive (.bcfzip), at most 50 MB")


class BcfImportedTopicSerializer(serializers.Serializer):
    topic = serializers.CharField(help_text="the BCF topic guid")
    issueId = serializers.CharField()
    title = serializers.CharField()
    notes = serializers.ListField(child=serializers.CharField(), help_text="what of the topic was not kept, and why")


class BcfUpdatedTopicSerializer(BcfImportedTopicSerializer):
    changes = serializers.ListField(child=serializers.CharField(), help_text="changed fields (API names), viewpoints, and 'comment <guid> added|changed|removed'")


class BcfSkippedTopicSerializer(serializers.Serializer):
    topic = serializers.CharField(help_text="the BCF topic guid")
    title = serializers.CharField()
    reason = serializers.CharField()


class BcfImportResultSerializer(serializers.Serializer):
    imported = BcfImportedTopicSerializer(many=True)
    updated = BcfUpdatedTopicSerializer(many=True, help_text="known topics that changed after their issue")
    skipped = BcfSkippedTopicSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField(),
                                     help_text="archive-wide warnings, e.g. an archive made for another model")
