from django.apps import AppConfig


def log_saved_version(*, model_id: str, version: str, changed: list, author: str, provenance: str, operation: str,
                      author_verified: bool = False, **kwargs) -> None:
    """The change log gets one entry per changed field of a version saved through the gateway."""
    from issues_app.services import record_version_changes

    record_version_changes(model_id=model_id, version=version, changed=changed, author=author, provenance=provenance, operation=operation,
                           author_verified=author_verified)


class IssuesAppConfig(AppConfig):
    name = "issues_app"
    verbose_name = "Review records"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from models_app.signals import version_saved

        version_saved.connect(log_saved_version, dispatch_uid="issues-log-saved-version")
