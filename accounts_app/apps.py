from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts_app"
    label = "accounts"
    verbose_name = "People and access"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from accounts_app.pages import receivers  # noqa: F401 - sign-ins and sign-outs into the audit trail
