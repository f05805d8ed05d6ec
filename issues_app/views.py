import json

from django.http import FileResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from api.principal import Principal
from api.signatures import signed_by
from api.views import json_object, validated
from core.errors import Invalid
from core.limits import BCF_ARCHIVE_MAX_BYTES, ISSUE_PART_MAX_BYTES
from issues_app import selectors, services
from issues_app.issue_files import issue_image_urls
from issues_app.serializers import (
    BcfImportResultSerializer,
    BcfImportSerializer,
    ChangeEntrySerializer,
    CommentInputSerializer,
    CommentPatchSerializer,
    CommentSerializer,
    IssueCreateSerializer,
    IssueFilterSerializer,
    IssueInputSerializer,
    IssuePatchSerializer,
    IssueSerializer,
    MigrateRequestSerializer,
    MigrateResultSerializer,
    PropertiesUpdateSerializer,
)
from issues_app.use_cases import import_bcf, migrate_overrides
from models_app.selectors import model_get
from api.envelope import enveloped_json
from api.static_files import serve_file
from api.uploads import UploadLimit


def _issue_part(request) -> dict:
    """The `issue` part: a plain form field or a file part (FormData with a Blob, curl -F issue=@x.json)."""
    raw = request.data.get("issue")
    if raw is None:
        raw = request.FILES.get("issue")
    if raw is None:
        raise Invalid("multipart part 'issue' (a JSON string) is required")
    if hasattr(raw, "read"):
        if raw.size > ISSUE_PART_MAX_BYTES:
            raise Invalid("part 'issue' is larger than 5 MB")
        try:
            raw = raw.read().decode("utf-8")
        except UnicodeDecodeError:
            raise Invalid("part 'issue' is not UTF-8 text") from None
    try:
        payload = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise Invalid(f"part 'issue' is not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise Invalid("part 'issue' must be a JSON object")
    return payload


class IssueListView(UploadLimit, APIView):
    parser_classes = [MultiPartParser]
    upload_limit_bytes = services.SCREENSHOT_MAX_BYTES
    upload_limit_what = "screenshot"

    @extend_schema(
        parameters=[IssueFilterSerializer], responses=IssueSerializer(many=True),
        summary="Issues of a model, newest first (filters: status, priority, assignedTo, label, topicType, stage, entityId, q)",
    )
    def get(self, request, model_id):
        model_get(model_id)
        filters = validated(IssueFilterSerializer, request.query_params)
        return enveloped_json(selectors.issue_list_json_data(model_id, filters))

    @extend_schema(
        request={"multipart/form-data": IssueCreateSerializer},
        responses={200: IssueSerializer, 400: OpenApiResponse(description="40001 invalid issue, 40002 screenshot over 5 MB")},
        summary="Pin a review issue (optional PNG screenshot)",
    )
    def post(self, request, model_id):
        model_get(model_id)
        data = validated(IssueInputSerializer, _issue_part(request))
        issue = services.issue_create(model_id=model_id, data=data, screenshot=request.FILES.get("screenshot"), signature=signed_by(request, data["author"]), by=Principal.of(request))
        return Response(IssueSerializer(issue).data)


class IssueDetailView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(request=IssuePatchSerializer, responses=IssueSerializer, summary="Change title, comment, status, topic fields or viewpoints")
    def patch(self, request, model_id, issue_id):
        issue = selectors.issue_get(model_id, issue_id)
        changes = validated(IssuePatchSerializer, json_object(request), {"kept_urls": issue_image_urls(issue)})
        signature = signed_by(request, changes.get("modifiedAuthor"))
        return Response(IssueSerializer(services.issue_update(model_id=model_id, issue_id=issue_id, changes=changes, signature=signature, by=Principal.of(request))).data)

    @extend_schema(responses={200: OpenApiResponse(description="data: null")}, summary="Delete an issue and its screenshot")
    def delete(self, request, model_id, issue_id):
        services.issue_delete(model_id=model_id, issue_id=issue_id, by=Principal.of(request))
        return Response(None)


class CommentListView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(responses=CommentSerializer(many=True), summary="Comments of an issue, oldest first")
    def get(self, request, model_id, issue_id):
        return Response(CommentSerializer(selectors.comment_list(model_id, issue_id), many=True).data)

    @extend_schema(request=CommentInputSerializer, responses=CommentSerializer, summary="Add a comment to an issue")
    def post(self, request, model_id, issue_id):
        selectors.issue_get(model_id, issue_id)
        data = validated(CommentInputSerializer, json_object(request))
        comment = services.comment_add(model_id=model_id, issue_id=issue_id, text=data["text"], viewpoint_guid=data.get("viewpointGuid"),
                                       signature=signed_by(request, data["author"]), by=Principal.of(request))
        return Response(CommentSerializer(comment).data)


class CommentDetailView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(request=CommentPatchSerializer, responses=CommentSerializer, summary="Change a comment's text or viewpoint")
    def patch(self, request, model_id, issue_id, comment_id):
        selectors.comment_get(model_id, issue_id, comment_id)
        changes = validated(CommentPatchSerializer, json_object(request))
        signature = signed_by(request, changes.get("modifiedAuthor"))
        comment = services.comment_update(model_id=model_id, issue_id=issue_id, comment_id=comment_id, changes=changes, signature=signature, by=Principal.of(request))
        return Response(CommentSerializer(comment).data)

    @extend_schema(responses={200: OpenApiResponse(description="data: null")}, summary="Delete a comment")
    def delete(self, request, model_id, issue_id, comment_id):
        services.comment_delete(model_id=model_id, issue_id=issue_id, comment_id=comment_id, by=Principal.of(request))
        return Response(None)


class IssueScreenshotView(APIView):
    @extend_schema(
        responses={(200, "image/png"): bytes, (200, "image/jpeg"): bytes},
        summary="Issue screenshot, viewpoint snapshot or bitmap (anonymous, no envelope)",
    )
    def get(self, request, model_id, file_name):
        path = selectors.screenshot_file(model_id, file_name)
        return serve_file(request, path, "image/jpeg" if path.suffix == ".jpg" else "image/png")


class OverrideSetView(APIView):
    @extend_schema(responses={200: OpenApiResponse(description="{entityId: {field: value}}, {} when none")}, summary="Override set of a model")
    def get(self, request, model_id):
        return Response(selectors.overrides_of_model(model_id))


class EntityPropertiesView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(
        request=PropertiesUpdateSerializer,
        responses={200: OpenApiResponse(description="the entity's effective overrides {field: value}")},
        summary="Override whitelisted properties of an element ('' clears)",
    )
    def put(self, request, model_id, entity_id):
        data = validated(PropertiesUpdateSerializer, json_object(request))
        effective = services.entity_properties_update(
            model_id=model_id,
            entity_id=entity_id,
            entity_name=data["entityName"],
            fields=data["fields"],
            provenance=data["provenance"],
            signature=signed_by(request, data["author"]),
        )
        return Response(effective)


class ChangeLogView(APIView):
    @extend_schema(responses=ChangeEntrySerializer(many=True), summary="Change log of a model, newest first")
    def get(self, request, model_id):
        return Response(ChangeEntrySerializer(selectors.change_entries_of_model(model_id), many=True).data)


class OverridesMigrateView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(
        request=MigrateRequestSerializer,
        responses={200: MigrateResultSerializer, 409: OpenApiResponse(description="40900: staged edits, or another migration running"), 502: OpenApiResponse(description="50200: edit service unreachable")},
        summary="Turn the model's overrides into build-script edits (one save, operation migrate)",
    )
    def post(self, request, model_id):
        data = validated(MigrateRequestSerializer, request.data if request.body else {})
        result = migrate_overrides.migrate_overrides(model_id=model_id, provenance=data["provenance"], signature=signed_by(request, data["author"]))
        return Response(result)


class IssuesBcfExportView(APIView):
    @extend_schema(
        responses={(200, "application/octet-stream"): OpenApiResponse(description="BCF 3.0 archive (attachment, no envelope)")},
        summary="Export the model's issues as BCF 3.0 (.bcfzip)",
    )
    def get(self, request, model_id):
        file_name, archive = services.issues_export_bcf(model_id)
        return FileResponse(archive, content_type="application/octet-stream", as_attachment=True, filename=file_name)


class IssuesBcfImportView(UploadLimit, APIView):
    parser_classes = [MultiPartParser]
    upload_limit_bytes = BCF_ARCHIVE_MAX_BYTES
    upload_limit_what = "BCF archive"

    @extend_schema(
        request={"multipart/form-data": BcfImportSerializer},
        responses={200: BcfImportResultSerializer, 400: OpenApiResponse(description="40001 not a BCF 3.0 archive (reason in message), 40002 over 50 MB")},
        summary="Import a BCF 3.0 archive (.bcfzip): new topics become issues, known topics changed later update theirs",
    )
    def post(self, request, model_id):
        model_get(model_id)
        upload = request.FILES.get("file")
        if upload is None:
            raise Invalid("multipart part 'file' (a .bcfzip archive) is required")
        # the upload handler streamed the part into a temporary file: the archive is read from there, entry by entry
        archive = upload.temporary_file_path() if hasattr(upload, "temporary_file_path") else upload
        return Response(import_bcf.import_bcf(model_id=model_id, archive=archive, by=Principal.of(request)))
