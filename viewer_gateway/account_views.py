"""What the caller may do in one project or on one model: the web client shows or hides its buttons by it (the access
middleware decides each request again anyway). Here rather than in accounts_app, which sits below models_app in the
import layers and so cannot ask models_app where a model lies."""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts_app.policy import decide
from accounts_app.roles import SCOPED, Capability
from api.principal import Principal
from core.errors import Invalid, NotFound
from models_app.access_scopes import model_scope, project_scope


class CapabilitiesView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("model", str, required=False, description="a model id"),
                    OpenApiParameter("project", str, required=False, description="a project id (when no model is given)")],
        responses={200: OpenApiResponse(description="{modelId, projectId, capabilities: [view | download | review | edit | own]}"),
                   404: OpenApiResponse(description="40400 a model or project the caller may not see")},
        summary="The caller's capabilities on a model or in a project",
    )
    def get(self, request):
        model_id, project_id = request.query_params.get("model"), request.query_params.get("project")
        if not (model_id or project_id):
            raise Invalid("name a model (?model=<id>) or a project (?project=<id>)")
        scope = model_scope(model_id) if model_id else project_scope(project_id)
        principal = Principal.of(request)
        if not decide(principal, Capability.VIEW, scope).allowed:
            raise NotFound(f"model {model_id} not found" if model_id else f"project {project_id} not found")
        allowed = [capability.value for capability in Capability if capability in SCOPED and decide(principal, capability, scope).allowed]
        return Response({"modelId": scope.model_id, "projectId": scope.project_id, "capabilities": allowed})
