"""Who is making a request, as far as the gateway can tell: a Django user (the admin's staff login), else the holder
of the one API token, else nobody in particular (authentication off). Recorded where an action must leave a trace
(deletions); author and provenance in bodies stay self-declared (spec, Authentication rule 6)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from core.provenance import DEFAULT_AUTHOR

TOKEN_PRINCIPAL = "api-token"


@dataclass(frozen=True)
class Principal:
    name: str
    address: str = ""  # the client address (a trusted proxy's X-Forwarded-For already applied, edge.trusted_scope)

    @classmethod
    def of(cls, request) -> Principal:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            name = user.get_username()
        elif settings.VIEWER.apiToken:
            name = TOKEN_PRINCIPAL  # the edge let the request through, so it carried the token
        else:
            name = DEFAULT_AUTHOR
        return cls(name=name, address=request.META.get("REMOTE_ADDR", ""))
