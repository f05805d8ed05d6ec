from django.contrib import admin

from plans_app.models import PlanVersion


@admin.register(PlanVersion)
class PlanVersionAdmin(admin.ModelAdmin):
    """Plan versions are history: shown, never edited."""

    list_display = ["project", "label", "operation", "changed", "author", "provenance", "created_at"]
    list_filter = ["operation", "provenance"]
    search_fields = ["project__id", "project__title", "note"]
    readonly_fields = [f.name for f in PlanVersion._meta.fields]

    @admin.display(description="version")
    def label(self, version):
        return version.label

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
