from django.apps import AppConfig


def write_missing_project_markers(**kwargs) -> None:
    from models_app.project_services import project_markers_write

    project_markers_write()


class ModelsAppConfig(AppConfig):
    name = "models_app"
    verbose_name = "Models"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from models_app.jobs import register_job_kinds
        from models_app.signals import gateway_starting

        register_job_kinds()

        gateway_starting.connect(write_missing_project_markers, dispatch_uid="models-project-markers")
