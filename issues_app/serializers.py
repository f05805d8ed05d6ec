import datetime

from rest_framework import serializers

from issues_app.models import OVERRIDE_FIELDS, ChangeEntry, Issue, Provenance


class StrictNumberField(serializers.FloatField):
    """A JSON number (not a numeric string, not a boolean)."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictStringField(serializers.CharField):
    """A JSON string (numbers are not silently turned into text)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class ProvenanceSerializer(serializers.Serializer):
    source = serializers.ChoiceField(choices=Provenance.choices)


class CameraSerializer(serializers.Serializer):
    eye = serializers.ListField(child=StrictNumberField(), min_length=3, max_length=3)
    look = serializers.ListField(child=StrictNumberField(), min_length=3, max_length=3)
    up = serializers.ListField(child=StrictNumberField(), min_length=3, max_length=3)


class IssueInputSerializer(serializers.Serializer):
    """The JSON `issue` part of POST issues."""

    entityId = serializers.CharField(required=False, allow_blank=True, max_length=64, default="")
    entityName = serializers.CharField(required=False, allow_blank=True, max_length=512, default="")
    entityType = serializers.CharField(required=False, allow_blank=True, max_length=128, default="")
    title = serializers.CharField(max_length=512)
    comment = serializers.CharField(required=False, allow_blank=True, default="")
    author = serializers.CharField(required=False, max_length=255, default="local-user")
    provenance = ProvenanceSerializer(required=False)
    camera = CameraSerializer(required=False, allow_null=True)


class IssueCreateSerializer(serializers.Serializer):
    """Multipart form of POST issues (documentation only; the view validates the parts)."""

    issue = serializers.CharField(help_text="JSON string: " + ", ".join(IssueInputSerializer().fields))
    screenshot = serializers.FileField(required=False, help_text="PNG, at most 5 MB")


class IssuePatchSerializer(serializers.Serializer):
    title = serializers.CharField(required=False, max_length=512)
    comment = serializers.CharField(required=False, allow_blank=True)
    status = serializers.ChoiceField(required=False, choices=Issue.Status.choices)

    def validate(self, attrs):
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(f"only title, comment and status can be changed, not {', '.join(unknown)}")
        return attrs


class IssueSerializer(serializers.ModelSerializer):
    entityId = serializers.CharField(source="entity_id")
    entityName = serializers.CharField(source="entity_name")
    entityType = serializers.CharField(source="entity_type")
    provenance = serializers.SerializerMethodField()
    camera = CameraSerializer(allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = Issue
        fields = [
            "id", "entityId", "entityName", "entityType", "title", "comment", "author", "provenance",
            "camera", "status", "screenshot", "createdAt", "updatedAt",
        ]

    def get_provenance(self, issue) -> ProvenanceSerializer:
        return {"source": issue.provenance}

    def to_representation(self, issue):
        # Same fields as declared above (they document the schema), built directly: a model's issue list is read
        # often and DRF's per-field machinery costs ~5x more.
        return {
            "id": issue.id,
            "entityId": issue.entity_id,
            "entityName": issue.entity_name,
            "entityType": issue.entity_type,
            "title": issue.title,
            "comment": issue.comment,
            "author": issue.author,
            "provenance": {"source": issue.provenance},
            "camera": issue.camera,
            "status": issue.status,
            "screenshot": issue.screenshot,
            "createdAt": _iso(issue.created_at),
            "updatedAt": _iso(issue.updated_at),
        }


def _iso(moment) -> str:
    """ISO 8601 UTC as DRF's DateTimeField writes it (USE_TZ, UTC): ...+00:00 -> ...Z."""
    return moment.astimezone(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


class PropertiesUpdateSerializer(serializers.Serializer):
    entityName = serializers.CharField(required=False, allow_blank=True, max_length=512, default="")
    fields = serializers.DictField(child=StrictStringField(allow_blank=True, trim_whitespace=False), allow_empty=False)
    author = serializers.CharField(required=False, max_length=255, default="local-user")
    provenance = ProvenanceSerializer(required=False)

    def validate_fields(self, value):
        unknown = sorted(set(value) - set(OVERRIDE_FIELDS))
        if unknown:
            raise serializers.ValidationError(
                f"outside the whitelist: {', '.join(unknown)} (allowed: {', '.join(OVERRIDE_FIELDS)})"
            )
        return value


class ChangeEntrySerializer(serializers.ModelSerializer):
    entityId = serializers.CharField(source="entity_id")
    entityName = serializers.CharField(source="entity_name")
    oldValue = serializers.CharField(source="old_value")
    newValue = serializers.CharField(source="new_value")
    provenance = serializers.SerializerMethodField()
    createdAt = serializers.DateTimeField(source="created_at")

    class Meta:
        model = ChangeEntry
        fields = ["id", "entityId", "entityName", "field", "oldValue", "newValue", "author", "provenance", "operation", "diff", "createdAt"]

    def get_provenance(self, entry) -> ProvenanceSerializer:
        return {"source": entry.provenance}


class MigrateRequestSerializer(serializers.Serializer):
    author = serializers.CharField(required=False, max_length=255, default="local-user")
    provenance = ProvenanceSerializer(required=False)


class MigratedFieldSerializer(serializers.Serializer):
    entityId = serializers.CharField()
    field = serializers.CharField()
    value = serializers.CharField()


class FailedFieldSerializer(MigratedFieldSerializer):
    reason = serializers.CharField()


class MigrateResultSerializer(serializers.Serializer):
    migrated = MigratedFieldSerializer(many=True, help_text="fields now written by the build script (override removed)")
    failed = FailedFieldSerializer(many=True, help_text="fields that keep their override, with the reason")
    version = serializers.CharField(allow_null=True, help_text="the version saved by the migration, null when none")
