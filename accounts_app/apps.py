from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts_app"
    label = "accounts"
    verbose_name = "People and access"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_save

        from accounts_app.mode import accounts_mark
        from accounts_app.pages import receivers  # noqa: F401 - sign-ins and sign-outs into the audit trail

        # the first user turns the accounts mode on, however it is made (manage.py, the admin, the API, single sign-on)
        post_save.connect(lambda **kwargs: kwargs["created"] and accounts_mark(), sender=get_user_model(), weak=False,
                          dispatch_uid="accounts-mode")
