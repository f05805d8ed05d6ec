from django.urls import path

from models_app import trash_views, views
from models_app.proxy_views import EditProxyView
from models_app.script_services import PROXY_ROUTES

api_urlpatterns = [
    path("models", views.ModelListView.as_view(), name="model-list"),
    path("models/<str:model_id>", views.ModelDetailView.as_view(), name="model-detail"),
    path("models/<str:model_id>/retry", views.ModelRetryView.as_view(), name="model-retry"),
    path("models/<str:model_id>/download", views.ModelDownloadView.as_view(), name="model-download"),
    path("models/<str:model_id>/revisions", views.ModelRevisionsView.as_view(), name="model-revisions"),
    path("models/<str:model_id>/versions/<str:version>/geometry", views.VersionGeometryView.as_view(), name="model-version-geometry"),
    # before plans_app's projects/<project_id>/<name> (viewer_gateway/urls.py includes these first)
    path("projects/<str:project_id>/models/<str:model_id>", views.ProjectModelView.as_view(), name="project-model"),
    path("projects/<str:project_id>/federation", views.ProjectFederationView.as_view(), name="project-federation"),
    path("trash", trash_views.TrashListView.as_view(), name="trash-list"),
    path("trash/<str:item_id>/restore", trash_views.TrashRestoreView.as_view(), name="trash-restore"),
    path("trash/<str:item_id>", trash_views.TrashItemView.as_view(), name="trash-item"),
    *(
        path(
            f"models/<str:model_id>/{route.route}",
            EditProxyView.as_view(route=route, http_method_names=[*route.methods, "options"]),
            name=f"edit-proxy-{route.route.replace('/', '-')}",
        )
        for route in PROXY_ROUTES
    ),
]

static_urlpatterns = [
    path("models/<str:model_id>/model.xkt", views.ModelXktView.as_view(), name="model-xkt"),
    path("models/<str:model_id>/metadata.json", views.ModelMetadataView.as_view(), name="model-metadata"),
    path("models/<str:model_id>/render.json", views.ModelRenderView.as_view(), name="model-render"),
    path("models/<str:model_id>/versions/<str:version>/model.xkt", views.VersionXktView.as_view(), name="model-version-xkt"),
    path("models/<str:model_id>/versions/<str:version>/metadata.json", views.VersionMetadataView.as_view(), name="model-version-metadata"),
]
