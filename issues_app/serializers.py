import datetime

from rest_framework import serializers

from issues_app.models import OVERRIDE_FIELDS, ChangeEntry, Issue
from viewer_gateway.fields import StrictCharField
from viewer_gateway.provenance import AuthorField, ProvenanceField


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


class IssueInputSerializer(serializers.Serializer):
    """The JSON `issue` part of POST issues."""

    entityId = StrictCharField(required=False, allow_blank=True, max_length=64, default="")
    entityName = StrictCharField(required=False, allow_blank=True, max_length=512, default="")
    entityType = StrictCharField(required=False, allow_blank=True, max_length=128, default="")
    title = StrictCharField(max_length=512)
    comment = StrictCharField(required=False, allow_blank=True, default="")
    author = AuthorField()
    provenance = ProvenanceField()
    camera = CameraSerializer(required=False, allow_null=True, default=None)


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


READ_ONLY_ISSUE_KEYS = {"id", "entityId", "entityName", "entityType", "author", "provenance", "camera", "screenshot", "createdAt", "updatedAt"}


class IssuePatchSerializer(serializers.Serializer):
    title = StrictCharField(required=False, max_length=512)
    comment = StrictCharField(required=False, allow_blank=True)
    status = serializers.ChoiceField(required=False, choices=Issue.Status.choices)

    def validate(self, attrs):
        unknown = sorted(set(self.initial_data) - set(self.fields) - READ_ONLY_ISSUE_KEYS)
        if unknown:
            raise serializers.ValidationError(f"only title, comment and status can be changed; unknown: {', '.join(unknown)}")
        return attrs


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

    class Meta:
        model = ChangeEntry
        fields = ["id", "entityId", "entityName", "field", "oldValue", "newValue", "author", "provenance", "operation", "diff", "createdAt"]


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


class BcfSkippedTopicSerializer(serializers.Serializer):
    topic = serializers.CharField(help_text="the BCF topic guid")
    title = serializers.CharField()
    reason = serializers.CharField()


class BcfImportResultSerializer(serializers.Serializer):
    imported = BcfImportedTopicSerializer(many=True)
    skipped = BcfSkippedTopicSerializer(many=True)
