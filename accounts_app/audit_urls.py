from django.urls import path

from accounts_app import audit_views

api_urlpatterns = [
    path("projects/<str:project_id>/audit", audit_views.ProjectAuditView.as_view(), name="project-audit"),
    path("audit", audit_views.AuditView.as_view(), name="audit"),
]
