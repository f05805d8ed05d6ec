"""The gateway's script-editing routes: thin views forwarding to the edit service (see script_services)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from api.signatures import signed_by
from core.errors import Invalid
from models_app import script_services
from models_app.edit_client import SandboxBusy

EDIT_RESPONSES = {
    200: OpenApiResponse(description="the edit service's answer in data"),
    400: OpenApiResponse(description="40001: invalid input, or the edit service answered 422 (its detail in message/data); 40002: body too large"),
    404: OpenApiResponse(description="40400: unknown model or version"),
    409: OpenApiResponse(description="40900: conflict reported by the edit service"),
    502: OpenApiResponse(description="50200: edit service unreachable, too slow or failing"),
    503: OpenApiResponse(description="50200: the edit service's sandbox is busy; retry after the Retry-After header's seconds"),
}
IDEMPOTENCY_HEADER = "Idempotency-Key"


class EditProxyView(APIView):
    """One route of the proxy table; configured per route through as_view(route=ProxyRoute(...))."""

    parser_classes = [JSONParser]
    route: script_services.ProxyRoute = None

    def _body(self, request):
        if request.method not in ("PUT", "POST") or not request.body:
            return None
        body = request.data
        if not isinstance(body, dict):
            raise Invalid("the body must be a JSON object")
        key = request.headers.get(IDEMPOTENCY_HEADER)
        if key and "requestId" not in body:
            body = {**body, "requestId": key}  # a retried save returns the version the first attempt made
        return body

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        if isinstance(exc, SandboxBusy):
            response["Retry-After"] = exc.retry_after
        return response

    def _forward(self, request, model_id):
        payload = script_services.forward(
            model_id=model_id,
            route=self.route,
            method=request.method,
            query=dict(request.query_params.lists()) or None,
            body=self._body(request),
            signature=signed_by(request),
            scope=getattr(request, "access_scope", None),
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
