from django.apps import AppConfig


async def perform_turn(work) -> None:
    """The agent's turn runner, imported on the first turn. The agent's imports (the LLM client, the review, check and
    edit tools with ifctester and its schema) cost about a second of processor time, which the workers and every
    manage.py command, none of which runs a turn, no longer pay at start; the gateway loads them as it starts
    (`load_agent`), so its first turn does not wait for them, and the OpenAI client (~0.4 s) only when a language
    model is configured."""
    from chat_app.agent import turn

    await turn.perform(work)


def load_agent(sender, **kwargs) -> None:
    from chat_app.agent import turn  # noqa: F401 - imported ahead of the first turn
    from chat_app.selectors import language_model_configured

    if language_model_configured():  # the OpenAI client too; without a model the chat runs offline and never needs it
        from chat_app.agent import llm  # noqa: F401


class ChatAppConfig(AppConfig):
    name = "chat_app"
    verbose_name = "Chat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from chat_app import lifecycle, receivers
        from models_app.signals import gateway_starting, project_deleting, project_event

        lifecycle.use_performer(perform_turn)
        gateway_starting.connect(load_agent, dispatch_uid="chat-load-agent")
        gateway_starting.connect(receivers.end_turns_cut_by_a_restart, dispatch_uid="chat-end-cut-turns")
        project_event.connect(receivers.publish_project_event, dispatch_uid="chat-project-event")
        project_deleting.connect(receivers.abort_turn_of_deleted_project, dispatch_uid="chat-abort-deleted-project")
