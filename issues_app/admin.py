from django.contrib import admin
from django.utils import timezone
from django.utils.html import format_html

from api.admin import ReadOnlyAdminMixin
from issues_app.models import ChangeEntry, Comment, Issue, Override


class CommentInline(admin.TabularInline):
    """The issue's thread; the viewpoint must be one of the issue's (checked by the API, shown here as its GUID)."""

    model = Comment
    extra = 0
    fields = ["guid", "date", "author", "text", "viewpoint_guid", "modified_date", "modified_author"]
    readonly_fields = ["guid", "viewpoint_guid"]
    ordering = ["date", "id"]


@admin.register(Issue)
class IssueAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "status", "priority", "assigned_to", "provenance", "entity_id", "entity_type", "model", "author", "thumbnail", "created_at"]
    list_filter = ["status", "provenance", "entity_type", "priority", "topic_type"]
    search_fields = ["title", "entity_id", "entity_name", "id", "assigned_to", "bcf_topic_guid"]
    readonly_fields = [
        "id", "model", "screenshot", "thumbnail", "camera", "bcf_topic_guid", "bcf_topic_status", "viewpoints", "document_references",
        "bcf_header_files", "created_at", "updated_at", "author_verified", "modified_author_verified", "assigned_to_member",
    ]
    list_select_related = ["model"]
    inlines = [CommentInline]

    def save_model(self, request, obj, form, change):
        if change and form.changed_data:
            obj.modified_at = timezone.now()
            obj.modified_author, obj.modified_author_verified = request.user.get_username(), True  # a staff account
        super().save_model(request, obj, form, change)

    def save_formset(self, request, form, formset, change):
        super().save_formset(request, form, formset, change)
        if formset.has_changed():  # a comment change is a change of the topic, as through the API
            Issue.objects.filter(pk=form.instance.pk).update(modified_at=timezone.now(), updated_at=timezone.now())

    @admin.display(description="screenshot")
    def thumbnail(self, issue):
        if not issue.screenshot:
            return ""
        url = f"/v1/models/{issue.model_id}/{issue.screenshot}"
        return format_html('<a href="{}"><img src="{}" style="max-height:48px;max-width:96px"></a>', url, url)


class ReadOnlyAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Overrides and change entries change only through the API (an override write always logs a change)."""


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
