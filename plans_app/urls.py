from django.urls import path

from plans_app import views

api_urlpatterns = [
    path("projects/<str:project_id>/plan_history", views.PlanHistoryView.as_view(), name="plan-history"),
    path("projects/<str:project_id>/plan_history/<str:base>/<str:target>/diff", views.PlanDiffView.as_view(), name="plan-diff"),
    path("projects/<str:project_id>/deliver", views.DeliverView.as_view(), name="plan-deliver"),
    path("projects/<str:project_id>/<str:name>", views.PlanFileView.as_view(), name="plan-file"),
]
