from django.apps import AppConfig


class ModelsAppConfig(AppConfig):
    name = "models_app"
    verbose_name = "Models"
    default_auto_field = "django.db.models.BigAutoField"
