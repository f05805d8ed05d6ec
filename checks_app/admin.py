from django.contrib import admin

from api.admin import ReadOnlyAdminMixin
from checks_app.models import Check, IdsFile, PinnedFailure


@admin.register(IdsFile)
class IdsFileAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "title", "updated_at")
    search_fields = ("name", "project__id", "project__title", "document__title")
    readonly_fields = ("project", "name", "document", "created_at", "updated_at")

    @admin.display(description="title")
    def title(self, ids_file):
        return ids_file.document.title


@admin.register(Check)
class CheckAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Checks are records of what ran: read-only; delete one to run it again."""

    list_display = ("id", "model", "version", "status", "progress_phase", "progress_percent", "created_at", "finished_at")
    list_filter = ("status", "include_overrides")
    search_fields = ("id", "model__id", "model__name")
    exclude = ("result",)
    readonly_fields = [field.name for field in Check._meta.fields if field.name != "result"] + ["documents"]
    deletable = True


@admin.register(PinnedFailure)
class PinnedFailureAdmin(admin.ModelAdmin):
    list_display = ("ids_name", "specification", "guid", "issue", "model", "updated_at")
    search_fields = ("ids_name", "specification", "guid", "issue__id", "model__id")
    readonly_fields = ("model", "ids_name", "specification", "guid", "issue", "last_check", "updated_at")

    def has_add_permission(self, request):
        return False
