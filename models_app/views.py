from django.conf import settings
from django.http import FileResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from models_app import services
from models_app.serializers import ModelSerializer, ModelUploadSerializer
from models_app.storage import IFC_FILE, METADATA_FILE, XKT_FILE, model_file
from models_app.uploads import size_limit_message
from viewer_gateway.envelope import InvalidInput, NotFound, TooLarge
from viewer_gateway.static_files import serve_file

MULTIPART_OVERHEAD_BYTES = 64 * 1024


class ModelListView(APIView):
    parser_classes = [MultiPartParser]

    @extend_schema(responses=ModelSerializer(many=True), summary="List models, newest first")
    def get(self, request):
        return Response(ModelSerializer(services.model_list(), many=True).data)

    @extend_schema(
        request={"multipart/form-data": ModelUploadSerializer},
        responses={200: ModelSerializer, 400: OpenApiResponse(description="40001 wrong file type, 40002 too large")},
        summary="Upload an IFC file; conversion is queued",
    )
    def post(self, request):
        content_length = request.META.get("CONTENT_LENGTH")
        max_bytes = settings.VIEWER.max_upload_bytes
        if content_length and content_length.isdigit() and int(content_length) > max_bytes + MULTIPART_OVERHEAD_BYTES:
            raise TooLarge(size_limit_message(max_bytes))  # rejected before a byte of the body is read
        uploaded = request.FILES.get("file")
        if uploaded is None:
            raise InvalidInput("multipart field 'file' (the .ifc file) is required")
        return Response(ModelSerializer(services.model_upload(uploaded_file=uploaded)).data)


class ModelDetailView(APIView):
    @extend_schema(responses=ModelSerializer, summary="Get one model")
    def get(self, request, model_id):
        return Response(ModelSerializer(services.model_get(model_id)).data)

    @extend_schema(responses={200: OpenApiResponse(description="data: null")}, summary="Delete a model and all its records")
    def delete(self, request, model_id):
        services.model_delete(model_id)
        return Response(None)


class ModelRetryView(APIView):
    @extend_schema(request=None, responses=ModelSerializer, summary="Re-queue the model's conversion")
    def post(self, request, model_id):
        return Response(ModelSerializer(services.model_retry(model_id)).data)


class ModelDownloadView(APIView):
    @extend_schema(responses={(200, "application/octet-stream"): bytes}, summary="Download the IFC file (no envelope)")
    def get(self, request, model_id):
        model = services.model_get(model_id)
        path = model_file(model.id, IFC_FILE)
        if not path.is_file():
            raise NotFound(f"model {model.id} has no IFC file")
        return FileResponse(open(path, "rb"), as_attachment=True, filename=model.name, content_type="application/x-step")


def _static_output(request, model_id: str, name: str, content_type: str):
    model = services.model_get(model_id)
    path = model_file(model.id, name)
    if not path.is_file():
        raise NotFound(f"{name} of model {model.id} is not available yet (status {model.status})")
    return serve_file(request, path, content_type)


class ModelXktView(APIView):
    @extend_schema(responses={(200, "application/octet-stream"): bytes, 206: bytes}, summary="Geometry (Range supported, no envelope)")
    def get(self, request, model_id):
        return _static_output(request, model_id, XKT_FILE, "application/octet-stream")


class ModelMetadataView(APIView):
    @extend_schema(responses={(200, "application/json"): dict}, summary="Meta-model (Range supported, no envelope)")
    def get(self, request, model_id):
        return _static_output(request, model_id, METADATA_FILE, "application/json")
