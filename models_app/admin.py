from django.contrib import admin, messages

from models_app import services
from models_app.models import IfcModel


@admin.register(IfcModel)
class IfcModelAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "status", "progress", "size", "created_at"]
    list_filter = ["status"]
    search_fields = ["name", "id"]
    ordering = ["-created_at"]
    readonly_fields = [f.name for f in IfcModel._meta.fields]
    actions = ["retry_conversion"]

    @admin.display(description="progress")
    def progress(self, model):
        return f"{model.progress_phase} {model.progress_percent}%" if model.status == IfcModel.Status.CONVERTING else ""

    def has_add_permission(self, request):
        return False  # models arrive through the upload API

    @admin.action(description="Retry conversion of the selected models")
    def retry_conversion(self, request, queryset):
        models = services.retry_conversions(model_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{len(models)} conversion(s) re-queued", messages.SUCCESS)
