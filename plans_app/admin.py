from django.contrib import admin

from api.admin import ReadOnlyAdminMixin
from plans_app.models import PlanVersion


@admin.register(PlanVersion)
class PlanVersionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Plan versions are history: shown, never edited."""

    list_display = ["project", "label", "operation", "changed", "author", "provenance", "created_at"]
    list_filter = ["operation", "provenance"]
    search_fields = ["project__id", "project__title", "note"]
    readonly_fields = [f.name for f in PlanVersion._meta.fields]

    @admin.display(description="version")
    def label(self, version):
        return version.label
