from django.urls import path

from checks_app import views

# Before plans_app's "projects/<project_id>/<name>", which would take "projects/{id}/ids" for a plan file.
api_urlpatterns = [
    path("projects/<str:project_id>/ids", views.ProjectIdsListView.as_view(), name="ids-file-list"),
    path("projects/<str:project_id>/ids/<str:name>", views.ProjectIdsView.as_view(), name="ids-file"),
    path("models/<str:model_id>/checks", views.ModelChecksView.as_view(), name="check-list"),
    path("models/<str:model_id>/checks/<str:check_id>", views.CheckView.as_view(), name="check-detail"),
    path("models/<str:model_id>/checks/<str:check_id>/report.html", views.CheckReportHtmlView.as_view(), name="check-report-html"),
    path("models/<str:model_id>/checks/<str:check_id>/report.bcfzip", views.CheckReportBcfView.as_view(), name="check-report-bcf"),
    path("models/<str:model_id>/checks/<str:check_id>/issues", views.CheckIssuesView.as_view(), name="check-issues"),
]
