"""The audit trail in the admin: read only (no add, change or delete), filtered by action, way in and date."""

from django.contrib import admin

from accounts_app.models import AuditEvent
from api.admin import ReadOnlyAdminMixin


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["at", "username", "via", "action", "object", "project_id", "ip"]
    list_filter = ["action", "via", "at"]
    date_hierarchy = "at"
    search_fields = ["username", "object"]
    readonly_fields = ["at", "username", "via", "action", "object", "project_id", "ip", "detail"]
