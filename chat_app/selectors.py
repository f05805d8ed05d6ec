"""Read-side queries of the chat app."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q

from accounts_app.policy import Scope
from chat_app.models import ChatSession
from models_app.access_scopes import model_scope, project_scope
from models_app.selectors import project_models


def visible_sessions():
    """Sessions the routes show: those of projects outside the trash, and those without a project (a trashed
    project's session stays as it is, hidden, and comes back with the project)."""
    return ChatSession.objects.filter(Q(project__isnull=True) | Q(project__deleted_at__isnull=True))


def session_overview(session_id: str) -> dict:
    """What the agent knows of its session: the project, the bound model, the project's models and the usage so far."""
    session = ChatSession.objects.select_related("project", "model").get(pk=session_id)
    overview: dict = {"sessionId": session.id, "project": None, "model": None, "models": [], "usage": session.usage or {}}
    if session.project is not None:
        project = session.project
        overview["project"] = {"projectId": project.id, "title": project.title, "kind": project.kind}
        overview["models"] = [{"id": m.id, "name": m.name, "status": m.status, "format": m.format} for m in project_models(project)]
    if session.model is not None:
        overview["model"] = {"id": session.model.id, "name": session.model.name, "status": session.model.status, "error": session.model.error}
    return overview


def language_model_configured() -> bool:
    """A language model is configured (llmAPIKey); without one the chat runs the offline model (agent/scripted.py)."""
    return bool(settings.VIEWER.llmAPIKey)


def session_scope(session_id: str) -> Scope:
    """Where a chat session's acts land, for the access decision: its project, else its legacy model."""
    row = ChatSession.objects.filter(pk=session_id).values_list("project_id", "model_id").first()
    if row is None:
        return Scope(exists=False)
    project_id, model_id = row
    # a legacy session with neither project nor model belongs to no one: the admins' (and the open mode's)
    return project_scope(project_id) if project_id else model_scope(model_id) if model_id else Scope()
