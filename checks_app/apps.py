from django.apps import AppConfig


def prepare_ids_validation(sender, **kwargs) -> None:
    """The gateway builds the IDS validator as it starts (a gateway_starting receiver); imported here, as the
    validation's module loads lxml's and RE2's pattern machinery that other processes need not."""
    from checks_app.engine.ids_schema import prepare_validation

    prepare_validation()


class ChecksAppConfig(AppConfig):
    name = "checks_app"
    verbose_name = "IDS checks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from checks_app.jobs import register_job_kinds
        from models_app.signals import gateway_starting

        register_job_kinds()
        gateway_starting.connect(prepare_ids_validation, dispatch_uid="checks-prepare-ids-validation")
