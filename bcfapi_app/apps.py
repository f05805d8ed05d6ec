from django.apps import AppConfig


class BcfApiAppConfig(AppConfig):
    name = "bcfapi_app"
    label = "bcfapi"
    verbose_name = "BCF API"
    default_auto_field = "django.db.models.BigAutoField"
