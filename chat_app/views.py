from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from api.views import json_object, validated
from chat_app import services
from chat_app.serializers import (
    AbortResultSerializer,
    AcceptedSerializer,
    AnswerSerializer,
    ChatSessionSerializer,
    MessagePostSerializer,
    ProjectCreateSerializer,
    ProjectSerializer,
    SessionOpenSerializer,
)
from models_app import project_services, trash_services
from models_app.selectors import project_get
from accounts_app.services.members import project_owner_add
from api.principal import Principal
from chat_app.access import require_session_scope, sessions_visible_to

NOT_FOUND = OpenApiResponse(description="40400: unknown session")
INVALID = OpenApiResponse(description="40001: invalid input")


class ProjectListView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(
        request=ProjectCreateSerializer,
        responses={200: ProjectSerializer, 400: OpenApiResponse(description="40001: kind missing or invalid"), 502: OpenApiResponse(description="50200: the edit service could not build the skeleton model")},
        summary="Create a project (kind ifc also gets its skeleton model, saved as v1, unless skeleton is false)",
    )
    def post(self, request):
        data = validated(ProjectCreateSerializer, json_object(request))
        project = project_services.project_create(title=data["title"], kind=data["kind"], skeleton=data["skeleton"])
        creator = Principal.of(request)
        if creator.has_account:
            project_owner_add(project.id, creator.user_id)  # whoever creates a project owns it
        return Response(ProjectSerializer(project).data)


class ProjectDetailView(APIView):
    @extend_schema(responses={200: ProjectSerializer, 404: OpenApiResponse(description="40400: unknown project")},
                   summary="The project with its models (ids, and each with its discipline, version and status)")
    def get(self, request, project_id):
        return Response(ProjectSerializer(project_get(project_id)).data)

    @extend_schema(responses={200: OpenApiResponse(description="data: null"), 404: OpenApiResponse(description="40400: unknown project")},
                   summary="Delete a project: it goes to the trash with its session, plan files and models (GET /api/v1/trash)")
    def delete(self, request, project_id):
        trash_services.project_trash(project_id, by=Principal.of(request))
        return Response(None)


class SessionListView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(responses=ChatSessionSerializer(many=True), summary="Chat sessions, newest first")
    def get(self, request):
        return Response(ChatSessionSerializer(sessions_visible_to(Principal.of(request), services.session_list()), many=True).data)

    @extend_schema(
        request=SessionOpenSerializer,
        responses={200: ChatSessionSerializer, 400: OpenApiResponse(description="40001: the project does not exist")},
        summary="Open the project's session (idempotent), or the legacy per-model session",
    )
    def post(self, request):
        data = validated(SessionOpenSerializer, json_object(request))
        require_session_scope(Principal.of(request), project_id=data["projectId"], model_id=data["modelId"])
        session = services.session_open(title=data["title"], project_id=data["projectId"], model_id=data["modelId"])
        return Response(ChatSessionSerializer(session).data)


class MessageListView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(responses={200: OpenApiResponse(description="[{info, parts}] in order, sub-agent messages included"), 404: NOT_FOUND}, summary="Messages of the session")
    def get(self, request, cid):
        return Response(services.messages_list(cid))

    @extend_schema(request=MessagePostSerializer, responses={200: AcceptedSerializer, 400: INVALID, 404: NOT_FOUND}, summary="Send a message (handled asynchronously; results on the event stream)")
    def post(self, request, cid):
        services.session_get(cid)
        data = validated(MessagePostSerializer, json_object(request))
        return Response(services.message_post(session_id=cid, text=data["text"], author=Principal.of(request)))


class AnswerView(APIView):
    parser_classes = [JSONParser]

    @extend_schema(request=AnswerSerializer, responses={200: AcceptedSerializer, 400: INVALID, 404: OpenApiResponse(description="40400: unknown session or question")}, summary="Answer the agent's question")
    def post(self, request, cid):
        services.session_get(cid)
        data = validated(AnswerSerializer, json_object(request))
        return Response(services.question_answer(session_id=cid, interrupt_id=data["interruptId"], answer=data["answer"], principal=Principal.of(request)))


class AbortView(APIView):
    @extend_schema(request=None, responses={200: AbortResultSerializer, 404: NOT_FOUND}, summary="Abort the running turn")
    def post(self, request, cid):
        return Response(services.turn_abort(cid))
