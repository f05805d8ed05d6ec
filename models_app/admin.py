from django.contrib import admin, messages

from api.admin import ReadOnlyAdminMixin
from core.errors import ApplicationError
from models_app import services, trash_services
from models_app.models import Deletion, IfcModel, ModelRevision, Project, TrashItem, VersionGeometry
from api.principal import Principal


class VersionGeometryInline(admin.TabularInline):
    model = VersionGeometry
    extra = 0
    can_delete = False
    fields = readonly_fields = ["version", "status", "progress_phase", "progress_percent", "attempts", "error", "updated_at"]

    def has_add_permission(self, request, obj=None):
        return False  # requested through the API (a version diff)


class ModelRevisionInline(admin.TabularInline):
    model = ModelRevision
    extra = 0
    can_delete = False
    fields = readonly_fields = ["version", "name", "size", "uploaded_at", "author"]

    def has_add_permission(self, request, obj=None):
        return False  # uploaded through the API (POST /api/v1/models/{id}/revisions)


@admin.register(IfcModel)
class IfcModelAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "status", "progress", "size", "created_at"]
    list_filter = ["status"]
    search_fields = ["name", "id"]
    ordering = ["-created_at"]
    readonly_fields = [f.name for f in IfcModel._meta.fields]
    inlines = [ModelRevisionInline, VersionGeometryInline]
    actions = ["retry_conversion", "move_to_trash"]

    @admin.display(description="progress")
    def progress(self, model):
        return f"{model.progress_phase} {model.progress_percent}%" if model.status == IfcModel.Status.CONVERTING else ""

    def has_add_permission(self, request):
        return False  # models arrive through the upload API

    def has_delete_permission(self, request, obj=None):
        return False  # deleting goes through the trash (the action below)

    @admin.action(description="Retry conversion of the selected models")
    def retry_conversion(self, request, queryset):
        models = services.retry_conversions(model_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{len(models)} conversion(s) re-queued", messages.SUCCESS)

    @admin.action(description="Move the selected models to the trash")
    def move_to_trash(self, request, queryset):
        _each(self, request, list(queryset.values_list("id", flat=True)), trash_services.model_trash, "moved to the trash")


def _each(model_admin, request, ids: list[str], use_case, done: str) -> None:
    """Runs a trash use case for each selected id as the admin user; reports what was done and what was refused."""
    by = Principal.of(request)
    succeeded = []
    for item_id in ids:
        try:
            use_case(item_id, by=by)
            succeeded.append(item_id)
        except ApplicationError as exc:
            model_admin.message_user(request, f"{item_id}: {exc.detail}", messages.ERROR)
    if succeeded:
        model_admin.message_user(request, f"{len(succeeded)} {done}: {', '.join(succeeded)}", messages.SUCCESS)


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
    actions = ["move_to_trash"]

    def has_add_permission(self, request):
        return False  # projects are created through the API (kind ifc builds a model)

    def has_delete_permission(self, request, obj=None):
        return False  # deleting goes through the trash (the action below)

    @admin.action(description="Move the selected projects to the trash with their session, plan files and models")
    def move_to_trash(self, request, queryset):
        _each(self, request, list(queryset.values_list("id", flat=True)), trash_services.project_trash, "project(s) moved to the trash")


@admin.register(TrashItem)
class TrashAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """What is in the trash; restored and purged only through the actions (the same use cases as the API)."""

    list_display = ["target_id", "kind", "title", "deleted_at", "deleted_by", "client_address", "purge_at"]
    list_filter = ["kind"]
    search_fields = ["target_id", "title", "deleted_by"]
    actions = ["restore", "purge"]

    def get_queryset(self, request):
        return trash_services.trash_list()

    @admin.action(description="Restore the selected items (a project with its models, session and plans)")
    def restore(self, request, queryset):
        _each(self, request, list(queryset.values_list("target_id", flat=True)), trash_services.trash_restore, "restored")

    @admin.action(description="Purge the selected items now (files go for good; change log and deletion records stay)")
    def purge(self, request, queryset):
        _each(self, request, list(queryset.values_list("target_id", flat=True)), trash_services.trash_purge, "purged")


@admin.register(Deletion)
class DeletionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Every deletion, kept after restore and purge (history, read-only)."""

    list_display = ["target_id", "kind", "title", "deleted_at", "deleted_by", "client_address", "restored_at", "purged_at"]
    list_filter = ["kind"]
    search_fields = ["target_id", "title", "deleted_by"]
