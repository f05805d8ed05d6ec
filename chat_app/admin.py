from django.contrib import admin, messages

from chat_app import services
from chat_app.models import ChatSession, Message, PendingQuestion, SessionEvent, Turn


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records written by turns: history, changed only by the chat itself."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ChatSession)
class ChatSessionAdmin(ReadOnlyAdmin):
    list_display = ["id", "title", "project", "model", "last_seq", "created_at"]
    search_fields = ["id", "title", "external_session_id"]
    actions = ["abort_turn"]

    @admin.action(description="Abort the running turn of the selected sessions")
    def abort_turn(self, request, queryset):
        aborted = sum(services.turn_abort(session_id)["aborted"] for session_id in queryset.values_list("id", flat=True))
        self.message_user(request, f"{aborted} turn(s) aborted", messages.SUCCESS)


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    list_display = ["id", "session", "state", "outcome", "runner", "created_at", "started_at", "finished_at"]
    list_filter = ["state", "outcome"]
    search_fields = ["id", "session__id"]


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ["id", "session", "turn", "role", "subagent_id", "created_at"]
    list_filter = ["role"]
    search_fields = ["id", "session__id"]


@admin.register(SessionEvent)
class SessionEventAdmin(ReadOnlyAdmin):
    list_display = ["session", "seq", "event", "created_at"]
    list_filter = ["event"]
    search_fields = ["session__id"]


@admin.register(PendingQuestion)
class PendingQuestionAdmin(ReadOnlyAdmin):
    list_display = ["interrupt_id", "session", "kind", "state", "answer", "created_at"]
    list_filter = ["kind", "state"]
    search_fields = ["interrupt_id", "session__id"]
