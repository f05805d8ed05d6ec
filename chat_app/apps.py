from django.apps import AppConfig


class ChatAppConfig(AppConfig):
    name = "chat_app"
    verbose_name = "Chat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from chat_app import lifecycle, receivers
        from chat_app.agent import turn
        from models_app.signals import gateway_starting, project_deleting, project_event

        lifecycle.use_performer(turn.perform)
        gateway_starting.connect(receivers.end_turns_cut_by_a_restart, dispatch_uid="chat-end-cut-turns")
        project_event.connect(receivers.publish_project_event, dispatch_uid="chat-project-event")
        project_deleting.connect(receivers.abort_turn_of_deleted_project, dispatch_uid="chat-abort-deleted-project")
