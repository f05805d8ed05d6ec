from django.contrib import admin

from api.admin import ReadOnlyAdminMixin
from coordination_app.models import Clash, ClashRun, ClashTest


@admin.register(ClashTest)
class ClashTestAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "kind", "tolerance", "distance", "automatic", "updated_at")
    list_filter = ("kind", "automatic")
    search_fields = ("name", "project__id", "project__title")
    readonly_fields = ("project", "created_by", "created_at", "updated_at")


@admin.register(ClashRun)
class ClashRunAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Runs are records of what ran: read-only; deleting one deletes what it saw."""

    list_display = ("id", "test", "status", "trigger", "staged", "progress_phase", "progress_percent", "created_at", "finished_at")
    list_filter = ("status", "trigger", "staged")
    search_fields = ("id", "test__name", "test__project__id")
    deletable = True


@admin.register(Clash)
class ClashAdmin(admin.ModelAdmin):
    list_display = ("id", "test", "status", "review_status", "assigned_to", "last_run")
    list_filter = ("status", "review_status")
    search_fields = ("id", "test__name", "assigned_to")
    readonly_fields = ("id", "test", "a", "b", "status", "first_run", "last_run", "point", "depth", "distance", "updated_at")

    def has_add_permission(self, request):
        return False
