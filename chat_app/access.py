"""Which chat sessions a principal sees, and whether it may open one: a session is its project's (or, in the legacy
form, its model's), so the project's roles decide (accounts_app.policy)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from accounts_app.identity import refreshed
from accounts_app.policy import Forbidden, Scope, decide, require, visible_project_ids
from accounts_app.roles import Capability
from api.principal import Principal
from chat_app.models import ChatSession
from chat_app.selectors import session_scope
from models_app.access_scopes import model_scope, models_visible_to, project_scope
from models_app.models import IfcModel


def sessions_visible_to(principal: Principal, sessions: QuerySet[ChatSession]) -> QuerySet[ChatSession]:
    project_ids = visible_project_ids(principal)
    if project_ids is None:
        return sessions
    models = models_visible_to(principal, IfcModel.objects.all()).values("pk")
    return sessions.filter(Q(project_id__in=project_ids) | Q(project__isnull=True, model_id__in=models))


def _session_exists(scope: Scope) -> bool:
    """Whether the session this scope opens exists (a project's model talks in the project's session)."""
    if scope.project_id:
        return ChatSession.objects.filter(project_id=scope.project_id).exists()
    return ChatSession.objects.filter(model_id=scope.model_id, project__isnull=True).exists()


def require_session_scope(principal: Principal, *, project_id: str | None, model_id: str | None) -> None:
    """Opening a project's session needs to see the project, and creating it (the first opening) a caller that may
    write at all (not a read-only token or a share link); talking in it needs edit (the route rules). A legacy session with neither project nor model belongs to no one,
    so only admins (and the open mode) open one."""
    scope = project_scope(project_id) if project_id else model_scope(model_id) if model_id else None
    if scope is None:
        require(principal, Capability.ADMINISTER)
    elif scope.exists:  # an unknown project is the use case's 40001 (the spec's answer), not a hidden one
        require(principal, Capability.VIEW, scope)
        if principal.read_only and not _session_exists(scope):  # the first opening writes the session's row
            raise Forbidden("a read-only token or a share link opens a session only once a member has started it")


def stream_still_allowed(principal: Principal, session_key: str | None, session_id: str) -> bool:
    """Whether an open event stream may go on: its caller's credential still holds and still sees the session."""
    current = refreshed(principal, session_key)
    return current is not None and decide(current, Capability.VIEW, session_scope(session_id)).allowed
