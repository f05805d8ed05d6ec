"""Routes of clash tests, runs and clashes (coordination_app.views); included before plans_app's catch-all
projects/<project_id>/<name>. The names are the access rules' (viewer_gateway/access_rules.py)."""

from django.urls import path

from coordination_app import views

RUN = "projects/<str:project_id>/clash-tests/<str:name>/runs/<str:run_id>"

api_urlpatterns = [
    path("projects/<str:project_id>/clash-tests", views.ClashTestListView.as_view(), name="clash-tests"),
    path("projects/<str:project_id>/clash-tests/<str:name>", views.ClashTestView.as_view(), name="clash-test"),
    path("projects/<str:project_id>/clash-tests/<str:name>/runs", views.ClashRunListView.as_view(), name="clash-runs"),
    path(RUN, views.ClashRunView.as_view(), name="clash-run"),
    path(f"{RUN}/cancel", views.ClashRunCancelView.as_view(), name="clash-run-cancel"),
    path(f"{RUN}/clashes", views.ClashListView.as_view(), name="clash-list"),
    path(f"{RUN}/clashes/<str:clash_id>", views.ClashDetailView.as_view(), name="clash-detail"),
]
