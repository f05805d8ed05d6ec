from django.urls import path

from issues_app import views

api_urlpatterns = [
    path("models/<str:model_id>/issues", views.IssueListView.as_view(), name="issue-list"),
    path("models/<str:model_id>/issues.bcfzip", views.IssuesBcfExportView.as_view(), name="issues-bcf-export"),
    path("models/<str:model_id>/issues/bcf", views.IssuesBcfImportView.as_view(), name="issues-bcf-import"),
    path("models/<str:model_id>/issues/<str:issue_id>", views.IssueDetailView.as_view(), name="issue-detail"),
    path("models/<str:model_id>/issues/<str:issue_id>/comments", views.CommentListView.as_view(), name="comment-list"),
    path("models/<str:model_id>/issues/<str:issue_id>/comments/<str:comment_id>", views.CommentDetailView.as_view(), name="comment-detail"),
    path("models/<str:model_id>/overrides", views.OverrideSetView.as_view(), name="override-set"),
    path("models/<str:model_id>/overrides/migrate", views.OverridesMigrateView.as_view(), name="overrides-migrate"),
    path("models/<str:model_id>/entities/<str:entity_id>/properties", views.EntityPropertiesView.as_view(), name="entity-properties"),
    path("models/<str:model_id>/changes", views.ChangeLogView.as_view(), name="change-log"),
]

static_urlpatterns = [
    path("models/<str:model_id>/issues/<str:file_name>", views.IssueScreenshotView.as_view(), name="issue-screenshot"),
]
