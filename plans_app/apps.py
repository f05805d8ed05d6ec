from django.apps import AppConfig


class PlansAppConfig(AppConfig):
    name = "plans_app"
    verbose_name = "Plan artifacts"
    default_auto_field = "django.db.models.BigAutoField"
