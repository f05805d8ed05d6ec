from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from models_app.models import IfcModel, VersionGeometry


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
