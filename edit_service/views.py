"""Thin HTTP layer over edit_service.engine (validation in, engine call, JSON out)."""

from pathlib import Path

from django.conf import settings
from django.http import FileResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.decorators import api_view
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from edit_service import revisions
from edit_service import serializers as s
from edit_service.engine import history
from edit_service.engine.errors import Invalid, NotFound
from edit_service.engine.kinds import IFC
from edit_service.engine.sandbox import Sandbox
from edit_service.engine.store import ModelFiles
from edit_service.engine.workflow import Editor

RETIRED_DETAIL = (
    "Direct IFC editing is retired: the IFC is a product of the model's build script (script-as-source). "
    "Edit the build script instead (PUT /models/{id}/script, POST /models/{id}/script/edit-call), then run or save."
)


def editor(model_id: str) -> Editor:
    return Editor(settings.DATA_DIR, Sandbox(settings.SANDBOX_LIMITS), model_id, lock_timeout=settings.LOCK_TIMEOUT_SECONDS)


def validated(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


JSON = OpenApiResponse(description="JSON object")


@extend_schema(responses={200: JSON}, summary="Liveness")
@api_view(["GET"])
def health(request):
    return Response({"status": "ok"})


class PendingView(APIView):
    @extend_schema(responses={200: JSON}, summary="Pending entries (bookkeeping only; [] when empty)")
    def get(self, request, model_id):
        return Response(history.pending(ModelFiles(settings.DATA_DIR, model_id)))

    @extend_schema(responses={200: JSON}, summary="Discard pending entries -> {discarded: n}")
    def delete(self, request, model_id):
        files = ModelFiles(settings.DATA_DIR, model_id, lock_timeout=settings.LOCK_TIMEOUT_SECONDS).require()
        with files.lock():
            return Response({"discarded": history.discard_pending(files)})


class HistoryView(APIView):
    @extend_schema(responses={200: JSON}, summary="Edit history (read-only, edit-history.json)")
    def get(self, request, model_id):
        return Response(history.history(ModelFiles(settings.DATA_DIR, model_id).require()))


class UserEditsView(APIView):
    @extend_schema(request=s.UserEditsSerializer, responses={200: JSON}, summary="Append user edit events as USER modifications")
    def post(self, request, model_id):
        files = ModelFiles(settings.DATA_DIR, model_id, lock_timeout=settings.LOCK_TIMEOUT_SECONDS).require()
        data = validated(s.UserEditsSerializer, request.data)
        with files.lock():
            entries = history.append_history(files, history.user_edit_entries(data["origin"], data["author"], data["events"]))
        return Response({"appended": len(entries), "ids": [e["id"] for e in entries]})


class VersionsView(APIView):
    @extend_schema(responses={200: JSON}, summary="{versions: [{version, createdAt, author}], current}")
    def get(self, request, model_id):
        return Response(editor(model_id).version_list())


class VersionIfcView(APIView):
    @extend_schema(
        responses={(200, "application/x-step"): bytes, 404: OpenApiResponse(description="unknown model or version, or a drawing (no IFC)")},
        summary="A saved version's IFC, streamed (rebuilt from its script in the sandbox and cached when not materialised)",
    )
    def get(self, request, model_id, version):
        model_editor = editor(model_id)
        model_editor.files.require()
        if model_editor.files.kind is not IFC:
            raise NotFound(f"model {model_id} is a {model_editor.files.kind.what}: it has no IFC versions")
        path = model_editor.version_ifc(version)
        return FileResponse(open(path, "rb"), as_attachment=True, filename=f"{model_id}-{version}.ifc", content_type="application/x-step")


class ScriptsView(APIView):
    @extend_schema(responses={200: JSON}, summary="Big versions with their scripts' metadata")
    def get(self, request, model_id):
        return Response(editor(model_id).script_list())


class ScriptView(APIView):
    @extend_schema(responses={200: JSON}, summary="Current script (staged state, else last saved)")
    def get(self, request, model_id):
        return Response(editor(model_id).script_state())

    @extend_schema(request=s.ScriptPutSerializer, responses={200: JSON}, summary="Stage a full script or new PARAMS (exactly one)")
    def put(self, request, model_id):
        data = validated(s.ScriptPutSerializer, request.data)
        return Response(editor(model_id).stage(script=data["script"], params=data["params"], note=data["note"]))


class ScriptParamsView(APIView):
    @extend_schema(responses={200: JSON}, summary="PARAMS by syntax analysis (nothing runs)")
    def get(self, request, model_id):
        return Response(editor(model_id).params())


class UndoView(APIView):
    @extend_schema(request=None, responses={200: JSON}, summary="Move the staging cursor back (409 when nothing to undo)")
    def post(self, request, model_id):
        return Response(editor(model_id).undo())


class RedoView(APIView):
    @extend_schema(request=None, responses={200: JSON}, summary="Move the staging cursor forward (409 when nothing to redo)")
    def post(self, request, model_id):
        return Response(editor(model_id).redo())


class DiscardView(APIView):
    @extend_schema(request=None, responses={200: JSON}, summary="Drop staging; back to the last saved version")
    def post(self, request, model_id):
        return Response(editor(model_id).discard())


class RunView(APIView):
    @extend_schema(request=None, responses={200: JSON}, summary="Run the staged script in the sandbox into the working product")
    def post(self, request, model_id):
        return Response(editor(model_id).run())


class SaveView(APIView):
    @extend_schema(request=s.SaveSerializer, responses={200: JSON}, summary="Run (if needed) and save a new big version")
    def post(self, request, model_id):
        data = validated(s.SaveSerializer, request.data or {})
        source = (data.get("provenance") or {}).get("source", "UI")
        return Response(editor(model_id).save(note=data["note"], author=data["author"], provenance=source, operation=data["operation"], request_id=data.get("requestId")))


class CancelView(APIView):
    @extend_schema(request=None, responses={200: OpenApiResponse(description="{cancelled: <runs killed>}"), 404: OpenApiResponse(description="unknown model")},
                   summary="Kill the model's running sandbox runs (nothing they made is published; staging untouched)")
    def post(self, request, model_id):
        return Response(editor(model_id).cancel_runs())


class RollbackView(APIView):
    @extend_schema(request=s.RollbackSerializer, responses={200: JSON}, summary="Restore a version's script into staging and run it")
    def post(self, request, model_id):
        return Response(editor(model_id).rollback(validated(s.RollbackSerializer, request.data)["version"]))


class ScriptDiffView(APIView):
    @extend_schema(request=s.ScriptDiffSerializer, responses={200: JSON}, summary="Script diff of two big versions")
    def post(self, request, model_id):
        data = validated(s.ScriptDiffSerializer, request.data)
        return Response(editor(model_id).script_diff(data["base"], data["target"]))


class StagingDiffView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("from", int, required=False), OpenApiParameter("to", int, required=False)],
        responses={200: JSON}, summary="Diff between two staging steps (default the last two)",
    )
    def get(self, request, model_id):
        query = validated(s.StagingDiffQuerySerializer, request.query_params)
        return Response(editor(model_id).staging_diff(query.get("from"), query.get("to")))


class LocateView(APIView):
    @extend_schema(parameters=[OpenApiParameter("guid", str, required=True)], responses={200: JSON}, summary="Call site of an element in the build script")
    def get(self, request, model_id):
        return Response(editor(model_id).locate(validated(s.LocateQuerySerializer, request.query_params)["guid"]))


class EditCallView(APIView):
    @extend_schema(request=s.EditCallSerializer, responses={200: JSON}, summary="Rewrite one scalar argument of an element's call site, run, stage")
    def post(self, request, model_id):
        data = validated(s.EditCallSerializer, request.data)
        return Response(editor(model_id).edit_call(data["designKey"], data["argument"], data["value"]))


class SemanticDiffView(APIView):
    @extend_schema(request=s.SemanticDiffSerializer, responses={200: JSON}, summary="Attribute-level diff of two versions (target may be current)")
    def post(self, request, model_id):
        data = validated(s.SemanticDiffSerializer, request.data)
        return Response(editor(model_id).semantic_diff(data["base"], data["target"]))


class UploadDiffView(APIView):
    parser_classes = [MultiPartParser]

    @extend_schema(request={"multipart/form-data": s.UploadSerializer}, responses={200: JSON}, summary="Diff an uploaded IFC (or, for a drawing, DXF) against current (nothing stored)")
    def post(self, request, model_id):
        model_editor = editor(model_id)
        model_editor.files.require()
        upload = validated(s.UploadSerializer, request.data)["file"]  # streamed to disk, size-limited (uploads.py)
        upload.seek(0)
        if model_editor.files.kind is IFC and not upload.read(64).lstrip().startswith(b"ISO-10303-21;"):
            raise Invalid("the file is not an IFC (ISO-10303-21) file")
        return Response(model_editor.upload_diff(Path(upload.temporary_file_path())))


class RevisionDiffView(APIView):
    @extend_schema(
        request=s.ScriptDiffSerializer,
        responses={200: JSON, 404: OpenApiResponse(description="unknown model or revision"), 422: OpenApiResponse(description="missing or malformed base/target, or a revision that cannot be read")},
        summary="Attribute-level diff of two uploaded revisions (revisions/v<n>.ifc, kept by the gateway), with labels",
    )
    def post(self, request, model_id):
        data = validated(s.ScriptDiffSerializer, request.data)
        return Response(revisions.revision_diff(editor(model_id), data["base"], data["target"]))


def _gone(self, request, *args, **kwargs):
    return Response({"detail": RETIRED_DETAIL}, status=410)


_retired = extend_schema(request=None, responses={410: OpenApiResponse(description=RETIRED_DETAIL)}, summary="Retired: direct IFC editing (410)")


class RetiredEntityView(APIView):
    put = delete = _retired(_gone)


class RetiredSchemaView(APIView):
    get = _retired(_gone)


class RetiredCommitView(APIView):
    post = _retired(_gone)
