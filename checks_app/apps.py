from django.apps import AppConfig


class ChecksAppConfig(AppConfig):
    name = "checks_app"
    verbose_name = "IDS checks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from checks_app.jobs import register_job_kinds

        register_job_kinds()
