from django.apps import AppConfig


class ChecksAppConfig(AppConfig):
    name = "checks_app"
    verbose_name = "IDS checks"
    default_auto_field = "django.db.models.BigAutoField"
