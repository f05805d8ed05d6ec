from django.apps import AppConfig


class CoordinationAppConfig(AppConfig):
    name = "coordination_app"
    label = "coordination"
    verbose_name = "Coordination"
    default_auto_field = "django.db.models.BigAutoField"
