from django.http import FileResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts_app.audit import audit_record
from core.errors import Invalid, NotFound
from api.views import json_object, validated
from models_app import federation, project_services, revision_services, selectors, services, trash_services, version_geometry
from models_app.serializers import (
    FederationSerializer,
    ModelProjectUploadSerializer,
    ModelRevisionSerializer,
    ModelRevisionUploadSerializer,
    ModelSerializer,
    ModelUploadSerializer,
    ModelUploadTargetSerializer,
    ProjectModelPutSerializer,
    ProjectSerializer,
    VersionGeometrySerializer,
)
from models_app.storage import METADATA_FILE, RENDER_FILE, XKT_FILE, model_file
from api.principal import Principal
from models_app.access_scopes import models_visible_to
from api.static_files import serve_file
from api.uploads import UploadLimit

FILE_PART_REQUIRED = "multipart/form-data with a part 'file' (the .ifc file) is required"


class ModelListView(UploadLimit, APIView):
    parser_classes = [MultiPartParser]
    upload_limit_what = "the IFC file"

    @extend_schema(responses=ModelSerializer(many=True), summary="List models, newest first")
    def get(self, request):
        return Response(ModelSerializer(models_visible_to(Principal.of(request), selectors.model_list()), many=True).data)

    @extend_schema(
        request={"multipart/form-data": ModelProjectUploadSerializer},
        responses={200: ModelSerializer,
                   400: OpenApiResponse(description="40001 wrong file type, unknown projectId, discipline too long or without projectId; 40002 too large"),
                   403: OpenApiResponse(description="40300 the caller may not edit the project"),
                   404: OpenApiResponse(description="40400 a project the caller may not see")},
        summary="Upload an IFC file, optionally into a project (projectId, discipline); conversion is queued",
    )
    def post(self, request):
        uploaded = _file_part(request)
        target = validated(ModelUploadTargetSerializer, request.data)
        model = project_services.project_model_upload(uploaded_file=uploaded, project_id=target["projectId"], discipline=target["discipline"],
                                                      by=Principal.of(request))
        return Response(ModelSerializer(model).data)


def _file_part(request):
    if not (request.content_type or "").startswith("multipart/form-data"):
        raise Invalid(f"{FILE_PART_REQUIRED}, got Content-Type {request.content_type or 'none'!r}")
    uploaded = request.FILES.get("file")
    if uploaded is None:
        raise Invalid(FILE_PART_REQUIRED)
    return uploaded


class ModelRevisionsView(UploadLimit, APIView):
    parser_classes = [MultiPartParser]
    upload_limit_what = "the IFC file"

    @extend_schema(responses=ModelRevisionSerializer(many=True), summary="An uploaded model's revisions, oldest first ([] before its first new revision)")
    def get(self, request, model_id):
        return Response(ModelRevisionSerializer(revision_services.revision_list(model_id), many=True).data)

    @extend_schema(
        request={"multipart/form-data": ModelUploadSerializer},
        responses={200: ModelRevisionUploadSerializer,
                   400: OpenApiResponse(description="40001 wrong file type, 40002 too large"),
                   404: OpenApiResponse(description="40400 unknown model"),
                   409: OpenApiResponse(description="40900 the model is built by a script (it gets versions by saving) or is a drawing")},
        summary="Upload a new revision of an uploaded model: same id, next version v<n>, converted like an upload",
    )
    def post(self, request, model_id):
        revision = revision_services.model_revision_upload(model_id=model_id, uploaded_file=_file_part(request), author=Principal.of(request).name, by=Principal.of(request))
        return Response(ModelRevisionUploadSerializer(revision).data)


class ModelDetailView(APIView):
    @extend_schema(responses=ModelSerializer, summary="Get one model")
    def get(self, request, model_id):
        return Response(ModelSerializer(selectors.model_get(model_id)).data)

    @extend_schema(responses={200: OpenApiResponse(description="data: null"), 404: OpenApiResponse(description="40400: unknown model")},
                   summary="Delete a model: it goes to the trash with its records and files (GET /api/v1/trash), purged after trashRetentionDays")
    def delete(self, request, model_id):
        trash_services.model_trash(model_id, by=Principal.of(request))
        return Response(None)


class ModelRetryView(APIView):
    @extend_schema(request=None, responses=ModelSerializer, summary="Re-queue the model's conversion")
    def post(self, request, model_id):
        return Response(ModelSerializer(services.model_retry(model_id)).data)


class ModelDownloadView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("product", str, enum=["current"], required=False, description="current: the working product (possibly an unsaved run) instead of the original")],
        responses={(200, "application/x-step"): bytes},
        summary="Download the original IFC (no envelope)",
    )
    def get(self, request, model_id):
        current_product = request.query_params.get("product") == "current"
        model, path = selectors.model_download_file(model_id, current_product=current_product)
        content_type = "application/dxf" if path.suffix == ".dxf" else "application/x-step"
        audit_record(Principal.of(request), "model.download", object=f"model:{model.id}", project_id=selectors.project_of_model(model.id) or "", detail={"file": path.name})
        return FileResponse(open(path, "rb"), as_attachment=True, filename=model.name, content_type=content_type)


def _static_output(request, model_id: str, name: str, content_type: str):
    model = selectors.model_get(model_id)
    path = model_file(model.id, name)
    if not path.is_file():
        raise NotFound(f"{name} of model {model.id} is not available yet (status {model.status})")
    return serve_file(request, path, content_type)


class ModelXktView(APIView):
    @extend_schema(responses={(200, "application/octet-stream"): bytes, 206: bytes}, summary="Geometry (Range supported, no envelope)")
    def get(self, request, model_id):
        return _static_output(request, model_id, XKT_FILE, "application/octet-stream")


class ModelRenderView(APIView):
    @extend_schema(responses={(200, "application/json"): dict}, summary="2D preview of a DXF drawing, render.json schemaVersion 2 (Range supported, no envelope, token required)")
    def get(self, request, model_id):
        model = selectors.model_get(model_id)
        if model.format != model.Format.DXF:
            raise NotFound(f"model {model.id} is an IFC model: render.json exists for DXF drawings only")
        return _static_output(request, model_id, RENDER_FILE, "application/json")


class ModelMetadataView(APIView):
    @extend_schema(responses={(200, "application/json"): dict}, summary="Meta-model (Range supported, no envelope)")
    def get(self, request, model_id):
        return _static_output(request, model_id, METADATA_FILE, "application/json")


class VersionGeometryView(APIView):
    @extend_schema(responses=VersionGeometrySerializer, summary="State of a saved version's geometry (40400 until requested)")
    def get(self, request, model_id, version):
        return Response(VersionGeometrySerializer(version_geometry.version_geometry_get(model_id, version)).data)

    @extend_schema(
        request=None,
        responses={200: VersionGeometrySerializer, 400: OpenApiResponse(description="40001: not a version v<n>, or a DXF drawing"),
                   404: OpenApiResponse(description="40400: unknown model or version")},
        summary="Request a saved version's geometry (XKT + metadata.json): queued for conversion once, its state answered",
    )
    def post(self, request, model_id, version):
        return Response(VersionGeometrySerializer(version_geometry.version_geometry_request(model_id, version)).data)


def _version_output(request, model_id: str, version: str, name: str, content_type: str):
    return serve_file(request, version_geometry.version_geometry_file(model_id, version, name), content_type)


class VersionXktView(APIView):
    @extend_schema(responses={(200, "application/octet-stream"): bytes, 206: bytes}, summary="A saved version's geometry, once ready (Range supported, no envelope)")
    def get(self, request, model_id, version):
        return _version_output(request, model_id, version, XKT_FILE, "application/octet-stream")


class VersionMetadataView(APIView):
    @extend_schema(responses={(200, "application/json"): dict}, summary="A saved version's meta-model, once ready (Range supported, no envelope)")
    def get(self, request, model_id, version):
        return _version_output(request, model_id, version, METADATA_FILE, "application/json")


class ProjectModelView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(
        request=ProjectModelPutSerializer,
        responses={200: ProjectSerializer,
                   400: OpenApiResponse(description="40001 discipline not a string or over 32 characters"),
                   403: OpenApiResponse(description="40300 the caller does not own the model or may not edit the project"),
                   404: OpenApiResponse(description="40400 unknown project or model"),
                   409: OpenApiResponse(description="40900 the model is in another project")},
        summary="Put an existing model into the project, or change its discipline there; answers the project",
    )
    def put(self, request, project_id, model_id):
        data = validated(ProjectModelPutSerializer, json_object(request))
        project = project_services.project_model_put(project_id=project_id, model_id=model_id, discipline=data.get("discipline"), by=Principal.of(request))
        return Response(ProjectSerializer(project).data)

    @extend_schema(
        request=None,
        responses={200: ProjectSerializer, 404: OpenApiResponse(description="40400 unknown project or model, or the model is not in the project")},
        summary="Take a model out of the project (the model stays, back with its uploader); answers the project",
    )
    def delete(self, request, project_id, model_id):
        return Response(ProjectSerializer(project_services.project_model_remove(project_id=project_id, model_id=model_id, by=Principal.of(request))).data)


class ProjectFederationView(APIView):
    @extend_schema(responses={200: FederationSerializer, 404: OpenApiResponse(description="40400 unknown project")},
                   summary="Each IFC model of the project placed in the project frame by its georeference (4x4 column-major, metres)")
    def get(self, request, project_id):
        return Response(federation.project_federation(project_id))
