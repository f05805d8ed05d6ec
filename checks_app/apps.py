from django.apps import AppConfig


class ChecksAppConfig(AppConfig):
    name = "checks_app"
    verbose_name = "IDS checks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from checks_app.engine.ids_schema import prepare_validation
        from checks_app.jobs import register_job_kinds
        from models_app.signals import gateway_starting

        register_job_kinds()
        gateway_starting.connect(prepare_validation, dispatch_uid="checks-prepare-ids-validation")
