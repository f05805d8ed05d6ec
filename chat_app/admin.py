from django.contrib import admin, messages

from chat_app import services
from chat_app.models import ChatSession, Message, PendingQuestion, Project, SessionEvent


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records written by turns: history, changed only by the chat itself."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class ProjectModelInline(admin.TabularInline):
    model = Project.ifc_models.through
    extra = 0
    can_delete = False
    readonly_fields = ["model"]

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "kind", "created_at"]
    list_filter = ["kind"]
    search_fields = ["id", "title"]
    readonly_fields = ["id", "kind", "created_at"]
    inlines = [ProjectModelInline]
    actions = ["delete_with_everything"]

    def has_add_permission(self, request):
        return False  # projects are created through the API (kind ifc builds a model)

    def has_delete_permission(self, request, obj=None):
        return False  # the action below deletes the models' files too

    @admin.action(description="Delete the selected projects with their session, plan files and models")
    def delete_with_everything(self, request, queryset):
        for project_id in list(queryset.values_list("id", flat=True)):
            services.project_delete(project_id)
        self.message_user(request, f"{len(queryset)} project(s) deleted", messages.SUCCESS)


@admin.register(ChatSession)
class ChatSessionAdmin(ReadOnlyAdmin):
    list_display = ["id", "title", "project", "model", "status", "runner", "last_seq", "created_at"]
    list_filter = ["status"]
    search_fields = ["id", "title", "external_session_id"]
    actions = ["abort_turn"]

    @admin.action(description="Abort the running turn of the selected sessions")
    def abort_turn(self, request, queryset):
        aborted = sum(services.turn_abort(session_id)["aborted"] for session_id in queryset.values_list("id", flat=True))
        self.message_user(request, f"{aborted} turn(s) aborted", messages.SUCCESS)


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ["id", "session", "role", "state", "subagent_id", "created_at"]
    list_filter = ["role", "state"]
    search_fields = ["id", "session__id"]


@admin.register(SessionEvent)
class SessionEventAdmin(ReadOnlyAdmin):
    list_display = ["session", "seq", "event", "created_at"]
    list_filter = ["event"]
    search_fields = ["session__id"]


@admin.register(PendingQuestion)
class PendingQuestionAdmin(ReadOnlyAdmin):
    list_display = ["interrupt_id", "session", "state", "answer", "created_at"]
    list_filter = ["state"]
    search_fields = ["interrupt_id", "session__id"]
