from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from api.fields import AuthorField, ProvenanceField
from api.signatures import signed_by
from core.errors import Invalid, TooLarge
from core.limits import PLAN_FILE_BYTES, size_limit_message
from plans_app import services
from plans_app.serializers import DeliverResultSerializer, DeliverSerializer, PlanHistorySerializer, PlanPutResultSerializer
from plans_app.use_cases.deliver import deliver

NOT_FOUND = OpenApiResponse(description="40400: unknown project, file or version")
INVALID = OpenApiResponse(description="40001: not JSON, or a schema violation (data.errors: [{file, path, message}]); 40002: over 5 MB")


def _json_body(request):
    declared = request.META.get("CONTENT_LENGTH") or ""
    if declared.isdigit() and int(declared) > PLAN_FILE_BYTES:
        raise TooLarge(size_limit_message(PLAN_FILE_BYTES, "the body"))
    if not request.body:
        raise Invalid("the body must be a JSON object")
    return request.data


def _who(request) -> tuple[str, str]:
    """author and provenance from the headers X-Author / X-Provenance (the body is the document itself); a caller with
    an account signs with its username instead of X-Author."""
    author = signed_by(request, AuthorField().run_validation(request.headers.get("X-Author"))).author
    provenance = ProvenanceField().run_validation({"source": request.headers["X-Provenance"]} if request.headers.get("X-Provenance") else None)
    return author, provenance


class PlanFileView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(responses={200: OpenApiResponse(description="the document (null before the first write); header ETag: \"v<n>\""), 404: NOT_FOUND}, summary="Read a plan file (plan, bim_supplement, building)")
    def get(self, request, project_id, name):
        document, version = services.plan_file_get(project_id=project_id, name=name)
        response = Response(document)
        if version:
            response["ETag"] = f'"{version}"'
        return response

    @extend_schema(
        request={"application/json": {"type": "object", "description": "the whole document, with schema '<name>/1'"}},
        parameters=[OpenApiParameter("If-Match", str, OpenApiParameter.HEADER, required=False, description='"v<n>": refuse with 40900 when the newest version is another')],
        responses={200: PlanPutResultSerializer, 400: INVALID, 404: NOT_FOUND, 409: OpenApiResponse(description="40900: If-Match does not match")},
        summary="Replace a plan file (one new version; identical content writes nothing)",
    )
    def put(self, request, project_id, name):
        author, provenance = _who(request)
        return Response(services.plan_file_put(
            project_id=project_id, name=name, document=_json_body(request), author=author, provenance=provenance,
            if_match=request.headers.get("If-Match"),
        ))


class PlanHistoryView(APIView):
    @extend_schema(responses={200: PlanHistorySerializer, 404: NOT_FOUND}, summary="Versions of the project's plan files")
    def get(self, request, project_id):
        return Response(services.plan_history(project_id=project_id))


class PlanDiffView(APIView):
    @extend_schema(responses={200: OpenApiResponse(description="{base, target, changes: [{file, path, kind, old, new}], stats: {added, removed, changed}}"), 400: INVALID, 404: NOT_FOUND},
                   summary="Field-by-field diff of two plan versions (v<n> or current)")
    def get(self, request, project_id, base, target):
        return Response(services.plan_diff(project_id=project_id, base=base, target=target))


class DeliverView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(
        request=DeliverSerializer,
        responses={200: DeliverResultSerializer, 400: INVALID, 404: NOT_FOUND, 409: OpenApiResponse(description="40900: the model has unsaved staged edits"), 502: OpenApiResponse(description="50200: edit service unreachable")},
        summary="Validate plan and BIM supplement, build the project's model from them, record the delivered building",
    )
    def post(self, request, project_id):
        body = _json_body(request)
        serializer = DeliverSerializer(data=body if isinstance(body, dict) else {})
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        return Response(deliver(project_id=project_id, plan=data["plan"], bim_supplement=data["bimSupplement"], provenance=data["provenance"],
                                signature=signed_by(request, data["author"])))
