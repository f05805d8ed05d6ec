from django.contrib import admin
from django.utils.html import format_html

from issues_app.models import ChangeEntry, Issue, Override


@admin.register(Issue)
class IssueAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "status", "provenance", "entity_id", "entity_type", "model", "author", "thumbnail", "created_at"]
    list_filter = ["status", "provenance", "entity_type"]
    search_fields = ["title", "entity_id", "entity_name", "id"]
    readonly_fields = ["id", "model", "screenshot", "thumbnail", "camera", "created_at", "updated_at"]
    list_select_related = ["model"]

    @admin.display(description="screenshot")
    def thumbnail(self, issue):
        if not issue.screenshot:
            return ""
        url = f"/v1/models/{issue.model_id}/{issue.screenshot}"
        return format_html('<a href="{}"><img src="{}" style="max-height:48px;max-width:96px"></a>', url, url)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Overrides and change entries change only through the API (an override write always logs a change)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Override)
class OverrideAdmin(ReadOnlyAdmin):
    list_display = ["entity_id", "field", "value", "entity_name", "model", "updated_at"]
    list_filter = ["field"]
    search_fields = ["entity_id", "entity_name", "value"]


@admin.register(ChangeEntry)
class ChangeEntryAdmin(ReadOnlyAdmin):
    list_display = ["id", "entity_id", "field", "old_value", "new_value", "operation", "provenance", "author", "model", "created_at"]
    list_filter = ["operation", "field", "provenance"]
    search_fields = ["entity_id", "entity_name", "id"]
