from django.urls import path

from models_app import views

api_urlpatterns = [
    path("models", views.ModelListView.as_view(), name="model-list"),
    path("models/<str:model_id>", views.ModelDetailView.as_view(), name="model-detail"),
    path("models/<str:model_id>/retry", views.ModelRetryView.as_view(), name="model-retry"),
    path("models/<str:model_id>/download", views.ModelDownloadView.as_view(), name="model-download"),
]

static_urlpatterns = [
    path("models/<str:model_id>/model.xkt", views.ModelXktView.as_view(), name="model-xkt"),
    path("models/<str:model_id>/metadata.json", views.ModelMetadataView.as_view(), name="model-metadata"),
]
