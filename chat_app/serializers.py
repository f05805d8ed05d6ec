from rest_framework import serializers

from chat_app.models import ChatSession
from chat_app.selectors import language_model_configured
from models_app.models import Project
from models_app.serializers import ProjectSerializer  # noqa: F401 - the chat's project routes answer it
from api.fields import StrictCharField


class ProjectCreateSerializer(serializers.Serializer):
    title = StrictCharField(required=False, allow_blank=True, max_length=255, default="", help_text="default 'AI 项目'")
    kind = serializers.ChoiceField(choices=Project.Kind.choices, error_messages={"required": "kind is required: ifc, cad or cad->ifc", "invalid_choice": "kind must be ifc, cad or cad->ifc, not {input!r}"})
    skeleton = serializers.BooleanField(required=False, default=True, help_text="kind ifc: false starts the project without its skeleton model (a project for uploaded models)")

    def validate_skeleton(self, value):
        if not isinstance(self.initial_data.get("skeleton", True), bool):
            raise serializers.ValidationError("skeleton must be true or false")
        return value


class SessionOpenSerializer(serializers.Serializer):
    title = StrictCharField(required=False, allow_blank=True, max_length=255, default="")
    projectId = StrictCharField(required=False, allow_blank=True, default="")
    modelId = StrictCharField(required=False, allow_blank=True, allow_null=True, default="", help_text="legacy form; may be empty")


class ChatSessionSerializer(serializers.Serializer):
    chatSessionId = serializers.CharField(source="id")
    externalSessionId = serializers.CharField(source="external_session_id", help_text="opaque id of the agent runtime's session (legacy name)")
    modelId = serializers.SerializerMethodField(help_text="empty when no model is bound")
    projectId = serializers.SerializerMethodField()
    title = serializers.CharField()
    createdAt = serializers.DateTimeField(source="created_at")
    languageModel = serializers.SerializerMethodField(help_text="false: no language model is configured (llmAPIKey), and the chat only says how to set one")

    def get_languageModel(self, session: ChatSession) -> bool:
        return language_model_configured()

    def get_modelId(self, session: ChatSession) -> str:
        """The bound model, unless it is in the trash (the binding comes back with it on restore)."""
        model = session.model  # the related descriptor reads past the trash filter; the list selects it along
        return model.id if model is not None and model.deleted_at is None else ""

    def get_projectId(self, session: ChatSession) -> str:
        return session.project_id or ""


class MessagePostSerializer(serializers.Serializer):
    text = StrictCharField(max_length=100_000, trim_whitespace=False, error_messages={"blank": "text must not be empty", "required": "text is required"})


class AnswerSerializer(serializers.Serializer):
    interruptId = StrictCharField(help_text="from the question.ask frame")
    answer = StrictCharField(allow_blank=True, trim_whitespace=False, max_length=100_000)


class AcceptedSerializer(serializers.Serializer):
    accepted = serializers.BooleanField()


class AbortResultSerializer(serializers.Serializer):
    aborted = serializers.BooleanField(help_text="false when no turn was running")
