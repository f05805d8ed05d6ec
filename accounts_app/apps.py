from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts_app"
    label = "accounts"
    verbose_name = "People and access"
    default_auto_field = "django.db.models.BigAutoField"
