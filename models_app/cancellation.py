"""Moved to core.cancellation (plans_app, chat_app.agent and models_app.project_services still import it here)."""

from core.cancellation import CancelGuard, Cancelled, cancellable, check, commit, record  # noqa: F401
