from django.contrib import admin, messages

from models_app import project_services, services
from models_app.models import IfcModel, Project, VersionGeometry


class VersionGeometryInline(admin.TabularInline):
    model = VersionGeometry
    extra = 0
    can_delete = False
    fields = readonly_fields = ["version", "status", "progress_phase", "progress_percent", "attempts", "error", "updated_at"]

    def has_add_permission(self, request, obj=None):
        return False  # requested through the API (a version diff)


@admin.register(IfcModel)
class IfcModelAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "status", "progress", "size", "created_at"]
    list_filter = ["status"]
    search_fields = ["name", "id"]
    ordering = ["-created_at"]
    readonly_fields = [f.name for f in IfcModel._meta.fields]
    inlines = [VersionGeometryInline]
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
            project_services.project_delete(project_id)
        self.message_user(request, f"{len(queryset)} project(s) deleted", messages.SUCCESS)
