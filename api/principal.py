"""Who is making a request: the identity every access decision and every signed record reads.

The gateway's access middleware (viewer_gateway/access.py) works it out once per request from what the request
carries (a session cookie, a personal or the operator's bearer token, a share link's cookie, or nothing in the open
single-user mode) and puts it on `request.principal`; management commands and scheduled work name themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from core.provenance import DEFAULT_AUTHOR

TOKEN_PRINCIPAL = "api-token"
OPERATOR = "operator"


class Via:
    SESSION = "session"
    TOKEN = "token"
    OAUTH = "oauth"  # an OAuth2 access token a BCF API client got with the user's consent
    OPERATOR = "operator"
    SHARE_LINK = "share-link"
    OPEN = "open"
    SYSTEM = "system"


@dataclass(frozen=True)
class ShareGrant:
    """What a share link opens: one project, optionally only some of its models, downloads or not."""

    link_id: str
    project_id: str
    model_ids: tuple[str, ...] = ()
    downloads: bool = False


@dataclass(frozen=True)
class Principal:
    name: str
    address: str = ""  # the client address (a trusted proxy's X-Forwarded-For already applied, edge.trusted_scope)
    via: str = Via.SYSTEM
    user_id: int | None = None  # the account, when the caller has one (session, personal or OAuth2 token)
    role: str = "admin"  # the server role; the operator token, the open mode and the system act as admins
    read_only: bool = False  # a read-scoped personal token
    token_id: str = ""
    share: ShareGrant | None = field(default=None)
    display_name: str = ""

    @property
    def has_account(self) -> bool:
        return self.user_id is not None

    @property
    def is_admin(self) -> bool:
        return self.role == "admin" and self.share is None

    @classmethod
    def of(cls, request) -> Principal:
        known = getattr(request, "principal", None)
        if known is not None:
            return known
        # a request that did not pass the access middleware (the admin site, a unit test calling a view): as before
        user = getattr(request, "user", None)
        address = request.META.get("REMOTE_ADDR", "")
        if user is not None and user.is_authenticated:
            return cls(name=user.get_username(), address=address, via=Via.SESSION, user_id=user.pk,
                       role="admin" if user.is_superuser else "user")
        if settings.VIEWER.apiToken:
            return cls(name=TOKEN_PRINCIPAL, address=address, via=Via.OPERATOR)
        return cls(name=DEFAULT_AUTHOR, address=address, via=Via.OPEN)
