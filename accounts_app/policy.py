"""The access decision: may this principal do this (a capability) to this (a scope)?

One function decides for every route (viewer_gateway/access.py asks it before any view runs), for every agent tool
(chat_app asks it with the principal of the user who wrote the message) and for every list a user sees. What the
principal may not see is "not found"; what it may see but not do is "forbidden".

    >>> decide(principal, Capability.EDIT, Scope(project_id="p_0123456789abcdef"))
    Decision(allowed=False, code=40300, message='your role in this project (reviewer) may not edit')
"""

from __future__ import annotations

from dataclasses import dataclass

from accounts_app.models import ProjectMember
from accounts_app.roles import PROJECT_ROLE_CAPABILITIES, READ_ONLY, SCOPED, Capability, ProjectRole, ServerRole
from api.principal import Principal
from core.errors import FORBIDDEN, NOT_FOUND, OK, ApplicationError


@dataclass(frozen=True)
class Scope:
    """Where an act lands: a project, or a model (in a project, or outside any and then its uploader's)."""

    project_id: str | None = None
    model_id: str | None = None
    owner_user_id: int | None = None  # the uploader of a model outside any project
    exists: bool = True  # False: the id names nothing (answered "not found" like something hidden)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    code: int = OK
    message: str = ""


ALLOW = Decision(True)


class Forbidden(ApplicationError):
    code = FORBIDDEN


class NotVisible(ApplicationError):
    code = NOT_FOUND


def _not_found(scope: Scope) -> Decision:
    what = f"model {scope.model_id}" if scope.model_id else f"project {scope.project_id}" if scope.project_id else "resource"
    return Decision(False, NOT_FOUND, f"{what} not found")


def project_role(principal: Principal, scope: Scope) -> ProjectRole | None:
    """The principal's role where the scope lies: its membership of the scope's project, or owner of a model it
    uploaded outside any project."""
    if principal.user_id is None:
        return None
    if scope.project_id is None:
        return ProjectRole.OWNER if scope.owner_user_id is not None and scope.owner_user_id == principal.user_id else None
    role = ProjectMember.objects.filter(project_id=scope.project_id, user_id=principal.user_id).values_list("role", flat=True).first()
    return ProjectRole(role) if role else None


def _share_decision(principal: Principal, capability: Capability, scope: Scope) -> Decision:
    grant = principal.share
    # a link to some models opens those models only, nothing project-wide (members, IDS files, plans, the chat)
    in_link = scope.project_id == grant.project_id and (not grant.model_ids or scope.model_id in grant.model_ids)
    if not in_link:
        return _not_found(scope)
    if capability == Capability.VIEW or (capability == Capability.DOWNLOAD and grant.downloads):
        return ALLOW
    return Decision(False, FORBIDDEN, "a share link opens the project for reading only")


def _read_only_refusal(principal: Principal, capability: Capability) -> Decision | None:
    if principal.read_only and capability not in READ_ONLY:
        return Decision(False, FORBIDDEN, "this token is read-only")
    return None


def decide(principal: Principal, capability: Capability, scope: Scope | None = None) -> Decision:
    if capability == Capability.PUBLIC:
        return ALLOW
    if capability in SCOPED:
        if scope is None or not scope.exists:
            return _not_found(scope or Scope())
        if principal.share is not None:
            return _share_decision(principal, capability, scope)
        refusal = _read_only_refusal(principal, capability)
        if principal.is_admin:
            return refusal or ALLOW
        role = project_role(principal, scope)
        if role is None:
            return _not_found(scope)
        if capability not in PROJECT_ROLE_CAPABILITIES[role]:
            return Decision(False, FORBIDDEN, f"your role in this project ({role}) may not {capability}")
        return refusal or ALLOW
    if principal.share is not None and capability != Capability.SIGNED_IN:
        return Decision(False, FORBIDDEN, "a share link opens the project for reading only")
    refusal = _read_only_refusal(principal, capability)
    if refusal:
        return refusal
    if capability in (Capability.SIGNED_IN, Capability.ACCOUNT):
        return ALLOW
    if capability == Capability.CREATE and principal.role in (ServerRole.ADMIN, ServerRole.USER):
        return ALLOW
    if capability == Capability.ADMINISTER and principal.is_admin:
        return ALLOW
    return Decision(False, FORBIDDEN, f"your server role ({principal.role}) may not {capability}")


def require(principal: Principal, capability: Capability, scope: Scope | None = None) -> None:
    """decide(), raised as an application error: for a use case whose scope is named in a request body (a session's
    project, an upload's projectId) rather than in its path, and for the agent's tools."""
    decision = decide(principal, capability, scope)
    if not decision.allowed:
        raise (NotVisible if decision.code == NOT_FOUND else Forbidden)(decision.message)


def visible_project_ids(principal: Principal) -> list[str] | None:
    """The projects whose contents the principal may read; None for all of them (admins, the operator, open mode)."""
    if principal.share is not None:
        return [principal.share.project_id]
    if principal.is_admin:
        return None
    if principal.user_id is None:
        return []
    return list(ProjectMember.objects.filter(user_id=principal.user_id).values_list("project_id", flat=True))
