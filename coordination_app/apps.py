"""Coordination: a project's models seen together, clash tests, their runs, and clashes tracked across versions."""
from django.apps import AppConfig


class CoordinationAppConfig(AppConfig):
    name = "coordination_app"
    label = "coordination"
    verbose_name = "Coordination"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from coordination_app import issue_receivers, receivers  # noqa: F401 - connects the receivers (issue_receivers: H5's)
        from coordination_app.jobs import register_job_kinds

        register_job_kinds()
