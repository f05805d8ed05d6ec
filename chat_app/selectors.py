"""Read-side queries of the chat app."""

from __future__ import annotations

import re

from chat_app.models import PROJECT_ID_PATTERN, ChatSession, Project
from viewer_gateway.envelope import NotFound

PROJECT_ID_RE = re.compile(rf"^{PROJECT_ID_PATTERN}$")


def project_get(project_id: str) -> Project:
    if not PROJECT_ID_RE.match(project_id or ""):
        raise NotFound(f"project {project_id!r} not found (ids look like p_ + 16 lowercase hex digits)")
    try:
        return Project.objects.get(pk=project_id)
    except Project.DoesNotExist:
        raise NotFound(f"project {project_id} not found") from None


def project_model_ids(project: Project) -> list[str]:
    return list(project.projectmodel_set.order_by("id").values_list("model_id", flat=True))


def session_overview(session_id: str) -> dict:
    """What the agent knows of its session: the project, the bound model and the project's models."""
    session = ChatSession.objects.select_related("project", "model").get(pk=session_id)
    overview: dict = {"sessionId": session.id, "project": None, "model": None, "models": []}
    if session.project is not None:
        project = session.project
        overview["project"] = {"projectId": project.id, "title": project.title, "kind": project.kind}
        overview["models"] = [
            {"id": m.id, "name": m.name, "status": m.status}
            for m in project.ifc_models.order_by("project_link__id")
        ]
    if session.model is not None:
        overview["model"] = {"id": session.model.id, "name": session.model.name, "status": session.model.status, "error": session.model.error}
    return overview
