from rest_framework import serializers
from rest_framework.renderers import JSONRenderer

from api.fields import AuthorField, ProvenanceField
from checks_app.models import PER_SPECIFICATION, PIN_CONFIRM_ABOVE, PIN_MODES, Check, IdsFile


class IdsFileSerializer(serializers.ModelSerializer):
    projectId = serializers.CharField(source="project_id")
    title = serializers.CharField(source="document.title")
    specifications = serializers.IntegerField(source="document.specifications")
    size = serializers.IntegerField(source="document.size")
    sha256 = serializers.CharField(source="document.sha256")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = IdsFile
        fields = ["name", "projectId", "title", "specifications", "size", "sha256", "createdAt", "updatedAt"]


class IdsFileContentSerializer(IdsFileSerializer):
    content = serializers.CharField(source="document.content")

    class Meta(IdsFileSerializer.Meta):
        fields = [*IdsFileSerializer.Meta.fields, "content"]


class CheckSerializer(serializers.ModelSerializer):
    """A check record; `result` only on the single-check answer when done."""

    checkId = serializers.CharField(source="id")
    modelId = serializers.CharField(source="model_id")
    includeOverrides = serializers.BooleanField(source="include_overrides")
    progress = serializers.SerializerMethodField()
    createdAt = serializers.DateTimeField(source="created_at")
    startedAt = serializers.DateTimeField(source="started_at")
    finishedAt = serializers.DateTimeField(source="finished_at")

    class Meta:
        model = Check
        fields = ["checkId", "modelId", "version", "ids", "includeOverrides", "status", "progress", "error", "summary", "createdAt", "startedAt", "finishedAt"]

    def get_progress(self, check) -> dict:
        return {"phase": check.progress_phase, "percent": check.progress_percent}


class CheckDetailSerializer(CheckSerializer):
    """The schema of the single-check answer; check_detail_json writes it."""

    result = serializers.JSONField()

    class Meta(CheckSerializer.Meta):
        fields = [*CheckSerializer.Meta.fields, "result"]


def check_detail_json(check: Check) -> bytes:
    """The single-check answer's JSON (CheckDetailSerializer's fields) for a check read with its result as JSON text
    (selectors.check_get(..., result_as_json=True)): the result's text goes in as the database holds it, neither
    decoded nor encoded again (the result of a large model is megabytes; the waiting client is answered the sooner)."""
    fields = JSONRenderer().render(CheckSerializer(check).data)
    return fields[:-1] + b',"result":' + (check.result_json or "null").encode() + b"}"


class CheckStartSerializer(serializers.Serializer):
    ids = serializers.ListField(child=serializers.CharField(max_length=100), allow_empty=False)
    version = serializers.CharField(required=False, allow_null=True, max_length=16)
    includeOverrides = serializers.BooleanField(required=False, default=False)


class PinIssuesSerializer(serializers.Serializer):
    author = AuthorField()
    provenance = ProvenanceField()
    per = serializers.ChoiceField(
        choices=PIN_MODES, required=False, default=PER_SPECIFICATION,
        help_text="one issue per failing specification (default), its failing elements selected in its viewpoint, or one per failing element",
    )
    confirm = serializers.BooleanField(
        required=False, default=False, help_text=f"needed when pinning per element creates more than {PIN_CONFIRM_ABOVE} issues (else 400, code 40001, nothing pinned)",
    )
