from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.fields import StrictCharField
from models_app.models import Deletion, IfcModel, ModelRevision, Project, ProjectModel, VersionGeometry
from models_app.selectors import model_current_version, project_links, project_model_ids


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


class ProjectModelDetailSerializer(serializers.Serializer):
    """One model of a project, from its membership row (ProjectModel)."""

    modelId = serializers.CharField(source="model_id")
    discipline = serializers.CharField(help_text="free text (ARC, STR, MEP, ...); empty when not given")
    version = serializers.SerializerMethodField(help_text="v<n>: the version its current product is (saved script version or uploaded revision)")
    status = serializers.CharField(source="model.status", help_text="converting, ready, failed")

    def get_version(self, link: ProjectModel) -> str:
        return model_current_version(link.model_id)


class ProjectSerializer(serializers.Serializer):
    projectId = serializers.CharField(source="id")
    title = serializers.CharField()
    kind = serializers.ChoiceField(choices=Project.Kind.choices)
    createdAt = serializers.DateTimeField(source="created_at")
    models = serializers.SerializerMethodField(help_text="model ids of the project, oldest first")
    modelDetails = serializers.SerializerMethodField(help_text="the same models in the same order, each with its discipline, version and status")

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_models(self, project: Project) -> list[str]:
        return project_model_ids(project)

    @extend_schema_field(ProjectModelDetailSerializer(many=True))
    def get_modelDetails(self, project: Project) -> list[dict]:
        return ProjectModelDetailSerializer(project_links(project), many=True).data


class ProjectModelPutSerializer(serializers.Serializer):
    discipline = StrictCharField(required=False, allow_blank=True, max_length=32,
                                 help_text="free text, e.g. ARC, STR, MEP; absent: unchanged (empty for a model just added)")


class ModelUploadTargetSerializer(serializers.Serializer):
    """The optional parts of an upload that put the model into a project."""

    projectId = StrictCharField(required=False, allow_blank=True, default="", help_text="the project to upload into (edit on it needed)")
    discipline = StrictCharField(required=False, allow_blank=True, default="", max_length=32, help_text="with projectId: the model's discipline")


class ModelProjectUploadSerializer(ModelUploadTargetSerializer):
    """The upload's multipart form (for the schema): the file, and optionally the project to put it into."""

    file = serializers.FileField(help_text="the IFC file (.ifc, ISO-10303-21 STEP content)")


class FederationModelSerializer(serializers.Serializer):
    modelId = serializers.CharField()
    discipline = serializers.CharField()
    version = serializers.CharField()
    status = serializers.CharField(help_text="converting, ready, failed")
    matrix = serializers.ListField(child=serializers.FloatField(), min_length=16, max_length=16,
                                   help_text="4x4 column-major: the model's IFC world (metres, Z up) -> the project frame (metres, Z up)")
    georeference = serializers.CharField(help_text="where the placement comes from: map-conversion, epset-map-conversion, site, none")
    crs = serializers.CharField(allow_null=True, help_text="the map's coordinate reference system (e.g. EPSG:25832), null when not named")


class FederationSerializer(serializers.Serializer):
    models = FederationModelSerializer(many=True)
    origin = serializers.ListField(child=serializers.FloatField(), min_length=3, max_length=3,
                                   help_text="the project frame's origin in map coordinates (metres); [0, 0, 0] without a map conversion")
    crs = serializers.CharField(allow_null=True, help_text="the CRS of the model that fixed the origin")


class TrashItemSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="target_id", help_text="the model id (m_...) or project id (p_...)")
    deletedAt = serializers.DateTimeField(source="deleted_at")
    deletedBy = serializers.CharField(source="deleted_by", help_text="api-token, an admin user's name, or local-user when authentication is off")
    purgeAt = serializers.DateTimeField(source="purge_at", help_text="when the purge removes it for good")

    class Meta:
        model = Deletion
        fields = ["id", "kind", "title", "deletedAt", "deletedBy", "purgeAt"]
        read_only_fields = fields
