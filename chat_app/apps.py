import logging

from django.apps import AppConfig

logger = logging.getLogger(__name__)


def end_turns_cut_by_a_restart(**kwargs) -> None:
    from chat_app.turns import recover_cut_turns

    cut = recover_cut_turns()
    if cut:
        logger.warning("chat turns cut by a restart ended with session.error: %s", ", ".join(cut))


class ChatAppConfig(AppConfig):
    name = "chat_app"
    verbose_name = "Chat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from models_app.signals import gateway_starting

        gateway_starting.connect(end_turns_cut_by_a_restart, dispatch_uid="chat-end-cut-turns")
