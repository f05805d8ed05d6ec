"""The gateway's script-editing routes: thin views forwarding to the edit service (see script_services)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from models_app import script_services

EDIT_RESPONSES = {
    200: OpenApiResponse(description="the edit service's answer in data"),
    400: OpenApiResponse(description="40001: invalid input, or the edit service answered 422 (its detail in message/data)"),
    404: OpenApiResponse(description="40400: unknown model or version"),
    409: OpenApiResponse(description="40900: conflict reported by the edit service"),
    502: OpenApiResponse(description="50200: edit service unreachable, too slow or failing"),
}


class EditProxyView(APIView):
    """One route of the proxy table; configured per route through as_view(edit_path=..., after=...)."""

    parser_classes = [JSONParser]
    edit_path = ""
    after = None  # "reconvert" or "save": what a success must trigger

    def _forward(self, request, model_id):
        body = request.data if request.method in ("PUT", "POST") and request.body else None
        payload = script_services.forward(
            model_id=model_id,
            method=request.method,
            edit_path=self.edit_path,
            query=dict(request.query_params.lists()) or None,
            body=body,
            after=self.after,
        )
        return Response(payload)

    @extend_schema(responses=EDIT_RESPONSES, summary="Proxied to the edit service")
    def get(self, request, model_id):
        return self._forward(request, model_id)

    @extend_schema(request=dict, responses=EDIT_RESPONSES, summary="Proxied to the edit service")
    def put(self, request, model_id):
        return self._forward(request, model_id)

    @extend_schema(request=dict, responses=EDIT_RESPONSES, summary="Proxied to the edit service")
    def post(self, request, model_id):
        return self._forward(request, model_id)

    @extend_schema(responses=EDIT_RESPONSES, summary="Proxied to the edit service")
    def delete(self, request, model_id):
        return self._forward(request, model_id)


# gateway route (under /api/v1/models/<id>/) -> edit-service path, methods, follow-up on success
PROXY_ROUTES = [
    ("script", "/script", ["get", "put"], None),
    ("script/params", "/script/params", ["get"], None),
    ("script/undo", "/script/undo", ["post"], None),
    ("script/redo", "/script/redo", ["post"], None),
    ("script/discard", "/script/discard", ["post"], "reconvert"),
    ("script/run", "/script/run", ["post"], "reconvert"),
    ("script/save", "/script/save", ["post"], "save"),
    ("script/rollback", "/script/rollback", ["post"], "reconvert"),
    ("script/diff", "/script/diff", ["post"], None),
    ("script/staging/diff", "/script/staging/diff", ["get"], None),
    ("script/locate", "/script/locate", ["get"], None),
    ("scripts", "/scripts", ["get"], None),
    ("edit/pending", "/pending", ["get", "delete"], None),
    ("edit/history", "/history", ["get"], None),
    ("edit/versions", "/versions", ["get"], None),
    ("edit/diff", "/diff", ["post"], None),
]
