from django.apps import AppConfig


class IssuesAppConfig(AppConfig):
    name = "issues_app"
    verbose_name = "Review records"
    default_auto_field = "django.db.models.BigAutoField"
