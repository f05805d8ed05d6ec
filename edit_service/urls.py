from django.urls import path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from edit_service import views

handler404 = "edit_service.errors.not_found_view"
handler500 = "edit_service.errors.server_error_view"

model = "models/<str:model_id>"
urlpatterns = [
    path("health", views.health),
    path(f"{model}/pending", views.PendingView.as_view()),
    path(f"{model}/history", views.HistoryView.as_view()),
    path(f"{model}/user-edits", views.UserEditsView.as_view()),
    path(f"{model}/versions", views.VersionsView.as_view()),
    path(f"{model}/versions/<str:version>/ifc", views.VersionIfcView.as_view()),
    path(f"{model}/scripts", views.ScriptsView.as_view()),
    path(f"{model}/diff", views.SemanticDiffView.as_view()),
    path(f"{model}/diff/upload", views.UploadDiffView.as_view()),
    path(f"{model}/revisions/diff", views.RevisionDiffView.as_view()),
    path(f"{model}/script", views.ScriptView.as_view()),
    path(f"{model}/script/params", views.ScriptParamsView.as_view()),
    path(f"{model}/script/undo", views.UndoView.as_view()),
    path(f"{model}/script/redo", views.RedoView.as_view()),
    path(f"{model}/script/discard", views.DiscardView.as_view()),
    path(f"{model}/script/run", views.RunView.as_view()),
    path(f"{model}/script/save", views.SaveView.as_view()),
    path(f"{model}/script/rollback", views.RollbackView.as_view()),
    path(f"{model}/script/diff", views.ScriptDiffView.as_view()),
    path(f"{model}/script/staging/diff", views.StagingDiffView.as_view()),
    path(f"{model}/script/locate", views.LocateView.as_view()),
    path(f"{model}/script/edit-call", views.EditCallView.as_view()),
    path(f"{model}/script/cancel", views.CancelView.as_view()),
    path(f"{model}/entities/<str:guid>", views.RetiredEntityView.as_view()),
    path(f"{model}/entities/<str:guid>/editable-schema", views.RetiredSchemaView.as_view()),
    path(f"{model}/commit", views.RetiredCommitView.as_view()),
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),
    path("docs", SpectacularSwaggerView.as_view(url_name="openapi"), name="docs"),
]
