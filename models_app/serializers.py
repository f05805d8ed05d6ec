from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from models_app.models import Deletion, IfcModel, ModelRevision, Project, VersionGeometry
from models_app.selectors import project_model_ids


class ProgressSerializer(serializers.Serializer):
    phase = serializers.CharField(help_text="queued, starting, reading, metadata, geometry, xkt, fallback, done")
    percent = serializers.IntegerField(min_value=0, max_value=100)


class ModelSerializer(serializers.ModelSerializer):
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)
    progress = serializers.SerializerMethodField(help_text="conversion progress while status is converting, else null")

    class Meta:
        model = IfcModel
        fields = ["id", "name", "size", "status", "createdAt", "error", "progress", "format"]
        read_only_fields = fields

    @extend_schema_field(ProgressSerializer(allow_null=True))
    def get_progress(self, model: IfcModel):
        if model.status != IfcModel.Status.CONVERTING:
            return None
        return {"phase": model.progress_phase or "queued", "percent": model.progress_percent}


class ModelUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="the IFC file (.ifc, ISO-10303-21 STEP content)")


class ModelRevisionSerializer(serializers.ModelSerializer):
    createdAt = serializers.DateTimeField(source="uploaded_at", help_text="when it was uploaded")
    fileName = serializers.CharField(source="name", help_text="the uploaded file's original name")
    author = serializers.CharField(help_text="api-token, an admin user's name, or local-user; empty when unknown (a first upload)")

    class Meta:
        model = ModelRevision
        fields = ["version", "createdAt", "author", "fileName", "size"]
        read_only_fields = fields


class ModelRevisionUploadSerializer(ModelSerializer):
    """The model (same id, status converting) and the revision just uploaded; instantiate with the revision."""

    revision = serializers.SerializerMethodField()

    class Meta(ModelSerializer.Meta):
        fields = [*ModelSerializer.Meta.fields, "revision"]
        read_only_fields = fields

    def __init__(self, revision: ModelRevision | None = None, **kwargs):
        super().__init__(revision.model if revision is not None else None, **kwargs)
        self.revision = revision

    @extend_schema_field(ModelRevisionSerializer)
    def get_revision(self, model: IfcModel):
        return ModelRevisionSerializer(self.revision).data


class VersionGeometrySerializer(serializers.ModelSerializer):
    progress = serializers.SerializerMethodField(help_text="while queued or converting: {phase (queued, starting, fetching, then the conversion's phases), percent}; else null")

    class Meta:
        model = VersionGeometry
        fields = ["version", "status", "progress", "error"]
        read_only_fields = fields

    @extend_schema_field(ProgressSerializer(allow_null=True))
    def get_progress(self, geometry: VersionGeometry):
        if geometry.status not in (VersionGeometry.Status.QUEUED, VersionGeometry.Status.CONVERTING):
            return None
        return {"phase": geometry.progress_phase or "queued", "percent": geometry.progress_percent}


class ProjectSerializer(serializers.Serializer):
    projectId = serializers.CharField(source="id")
    title = serializers.CharField()
    kind = serializers.ChoiceField(choices=Project.Kind.choices)
    createdAt = serializers.DateTimeField(source="created_at")
    models = serializers.SerializerMethodField(help_text="model ids of the project, oldest first")

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_models(self, project: Project) -> list[str]:
        return project_model_ids(project)


class TrashItemSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="target_id", help_text="the model id (m_...) or project id (p_...)")
    deletedAt = serializers.DateTimeField(source="deleted_at")
    deletedBy = serializers.CharField(source="deleted_by", help_text="api-token, an admin user's name, or local-user when authentication is off")
    purgeAt = serializers.DateTimeField(source="purge_at", help_text="when the purge removes it for good")

    class Meta:
        model = Deletion
        fields = ["id", "kind", "title", "deletedAt", "deletedBy", "purgeAt"]
        read_only_fields = fields
