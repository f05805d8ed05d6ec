"""Thin HTTP layer of automated review (IDS files, checks, reports, pinning)."""

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from api.envelope import enveloped_json
from api.principal import Principal
from api.signatures import signed_by
from api.views import json_object, validated
from checks_app import selectors, services
from checks_app.serializers import (
    CheckDetailSerializer,
    CheckSerializer,
    CheckStartSerializer,
    IdsFileContentSerializer,
    IdsFileSerializer,
    PinIssuesSerializer,
    check_detail_json,
)
from core.errors import Invalid, TooLarge
from core.limits import IDS_MAX_BYTES, size_limit_message
from api.uploads import UploadLimit

IDS_BODY = OpenApiResponse(description="the IDS XML (IDS 1.0), at most 5 MB")


class ProjectIdsListView(APIView):
    @extend_schema(responses=IdsFileSerializer(many=True), summary="The project's IDS files, by name")
    def get(self, request, project_id):
        return Response(IdsFileSerializer(selectors.ids_file_list(project_id), many=True).data)


class ProjectIdsView(APIView):
    parser_classes = []  # the body is read raw: it is the IDS XML itself

    @extend_schema(responses=IdsFileContentSerializer, summary="One IDS file of the project, with its XML as content")
    def get(self, request, project_id, name):
        return Response(IdsFileContentSerializer(selectors.ids_file_get(project_id, name)).data)

    @extend_schema(
        request={"application/xml": bytes},
        responses={200: IdsFileSerializer, 400: OpenApiResponse(description="40001 not a valid IDS 1.0 file (line and rule named), 40002 over 5 MB")},
        summary="Create or replace an IDS file (body: the IDS XML; validated against the IDS 1.0 XSD)",
    )
    def put(self, request, project_id, name):
        declared = request.META.get("CONTENT_LENGTH") or ""
        if declared.isdigit() and int(declared) > IDS_MAX_BYTES:
            raise TooLarge(size_limit_message(IDS_MAX_BYTES, "the IDS file"))
        if (request.content_type or "").startswith("multipart/"):
            raise Invalid("send the IDS XML itself as the request body (Content-Type application/xml), not a multipart form")
        ids_file, created = services.ids_file_put(project_id=project_id, name=name, data=request.body)
        return Response({**IdsFileSerializer(ids_file).data, "created": created})

    @extend_schema(responses={200: OpenApiResponse(description="data: null")}, summary="Delete an IDS file of the project")
    def delete(self, request, project_id, name):
        services.ids_file_delete(project_id=project_id, name=name, by=Principal.of(request))
        return Response(None)


class ModelChecksView(UploadLimit, APIView):
    parser_classes = [JSONParser, MultiPartParser]
    upload_limit_bytes = IDS_MAX_BYTES
    upload_limit_what = "an IDS file"

    @extend_schema(responses=CheckSerializer(many=True), summary="The model's IDS checks, newest first (without results)")
    def get(self, request, model_id):
        return Response(CheckSerializer(selectors.check_list(model_id), many=True).data)

    @extend_schema(
        request={"application/json": CheckStartSerializer, "multipart/form-data": {"type": "object", "properties": {
            "ids": {"type": "array", "items": {"type": "string", "format": "binary"}}, "version": {"type": "string"}, "includeOverrides": {"type": "boolean"}}}},
        responses={200: OpenApiResponse(description="{checkId, status, progress, cached}")},
        summary="Check a model version against IDS files (the project's by name, or uploaded); queued, or answered from the cache",
    )
    def post(self, request, model_id):
        if (request.content_type or "").startswith("multipart/form-data"):
            uploads = request.FILES.getlist("ids")
            if not uploads:
                raise Invalid("multipart/form-data needs one or more parts 'ids' (IDS files)")
            fields = {key: request.data.get(key) for key in ("version", "includeOverrides") if request.data.get(key) not in (None, "")}
            options = validated(CheckStartSerializer, {"ids": ["upload"], **fields})
            check, reused = services.check_start(model_id=model_id, uploads=uploads, version=options.get("version"), include_overrides=options["includeOverrides"])
        else:
            options = validated(CheckStartSerializer, json_object(request))
            check, reused = services.check_start(model_id=model_id, ids_names=options["ids"], version=options.get("version"), include_overrides=options["includeOverrides"])
        return Response({"checkId": check.id, "status": check.status, "progress": {"phase": check.progress_phase, "percent": check.progress_percent}, "cached": reused})


class CheckView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("waitSeconds", float, required=False, description=(
            "0-30 (default 0: at once): while the check is queued or running, answer as soon as it is done or failed, "
            "or after this many seconds with its state then"))],
        responses=CheckDetailSerializer, summary="One check; with result when done, error when failed",
    )
    def get(self, request, model_id, check_id):
        wait_seconds = services.wait_seconds_param(request.query_params.get("waitSeconds"))
        return enveloped_json(check_detail_json(services.check_get_waiting(model_id, check_id, wait_seconds)))


class CheckReportHtmlView(APIView):
    @extend_schema(responses={(200, "text/html"): str}, summary="The check as a self-contained HTML report (no envelope)")
    def get(self, request, model_id, check_id):
        name, html = services.check_report_html(model_id=model_id, check_id=check_id)
        response = HttpResponse(html, content_type="text/html; charset=utf-8")
        response["Content-Disposition"] = f'inline; filename="{name}"'
        response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
        return response


class CheckReportBcfView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("per", str, enum=["element", "specification"], required=False, description="one topic per failing element (default) or per failing specification")],
        responses={(200, "application/octet-stream"): bytes},
        summary="The check's failures as a BCF 3.0 archive (no envelope)",
    )
    def get(self, request, model_id, check_id):
        name, data = services.check_report_bcf(model_id=model_id, check_id=check_id, per=request.query_params.get("per") or "element")
        response = HttpResponse(data, content_type="application/octet-stream")
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


class CheckIssuesView(APIView):
    @extend_schema(
        request=PinIssuesSerializer,
        responses={200: OpenApiResponse(description="{created, reopened, resolved, unchanged}: [{issueId, ids, specification, guid (\"\" for a "
                                                     "specification's issue), elements (failing elements the issue covers)}]")},
        summary="Pin the check's failures as review issues (per specification or per element), deduplicated across re-checks",
    )
    def post(self, request, model_id, check_id):
        options = validated(PinIssuesSerializer, json_object(request))
        return Response(services.check_pin_issues(
            model_id=model_id, check_id=check_id, provenance=options["provenance"], per=options["per"], confirm=options["confirm"],
            signature=signed_by(request, options["author"]),
        ))
