"""Routes that turn a run's clashes into issues and a BCF report (coordination_app.issue_views); included before
plans_app's catch-all projects/<project_id>/<name>."""

from django.urls import path

from coordination_app import issue_views

RUN = "projects/<str:project_id>/clash-tests/<str:name>/runs/<str:run_id>"

api_urlpatterns = [
    path(f"{RUN}/issues", issue_views.ClashRunIssuesView.as_view(), name="clash-run-issues"),
    path(f"{RUN}/report.bcfzip", issue_views.ClashRunReportView.as_view(), name="clash-run-report"),
]
