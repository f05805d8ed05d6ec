"""Roles and what they allow: the one table every access decision reads (docs/security/roles.md).

A server role says what a person may do outside any project (an admin everything, a user create projects and
upload, a guest nothing until invited); a project role what a member may do inside one project. A capability is one
kind of act a route or an agent tool asks for; a role grants a set of them.
"""

from __future__ import annotations

from enum import StrEnum


class ServerRole(StrEnum):
    ADMIN = "admin"
    USER = "user"
    GUEST = "guest"


class ProjectRole(StrEnum):
    OWNER = "owner"
    EDITOR = "editor"
    REVIEWER = "reviewer"
    VIEWER = "viewer"


class Capability(StrEnum):
    """What a request asks to do. The first four are done to one project or model (its scope); the others are not."""

    VIEW = "view"  # read a model, its issues, checks, versions, files
    REVIEW = "review"  # issues, comments, viewpoints, IDS checks, clash runs and their statuses
    EDIT = "edit"  # upload, scripts, runs, saves, overrides, plans, the agent
    OWN = "own"  # members, share links, audit, delete
    DOWNLOAD = "download"  # the IFC file itself (a share link may leave it out)
    CREATE = "create"  # new projects and uploads outside a project: server role user or admin
    ADMINISTER = "administer"  # users and the server-wide audit: server admins and the operator
    SIGNED_IN = "signed-in"  # anything that needs only an identity (who am I, my tokens, lists filtered to me)
    ACCOUNT = "account"  # a change to one's own account (revoke a token, the password): not by a read-only token
    PUBLIC = "public"  # no identity needed (the web client's page, the sign-in page, the API docs)


SCOPED = frozenset({Capability.VIEW, Capability.REVIEW, Capability.EDIT, Capability.OWN, Capability.DOWNLOAD})

PROJECT_ROLE_CAPABILITIES: dict[ProjectRole, frozenset[Capability]] = {
    ProjectRole.VIEWER: frozenset({Capability.VIEW, Capability.DOWNLOAD}),
    ProjectRole.REVIEWER: frozenset({Capability.VIEW, Capability.DOWNLOAD, Capability.REVIEW}),
    ProjectRole.EDITOR: frozenset({Capability.VIEW, Capability.DOWNLOAD, Capability.REVIEW, Capability.EDIT}),
    ProjectRole.OWNER: frozenset(SCOPED),
}

# what a read-only personal token may do, whatever its owner's role
READ_ONLY = frozenset({Capability.VIEW, Capability.DOWNLOAD, Capability.SIGNED_IN, Capability.PUBLIC})
