"""Whose record it is: the author an issue, a comment, a change entry, a saved version or a plan file is signed
with (docs/security/roles.md, "Signed records").

A caller with an account signs with its username, whatever author its request declares (the declared one is ignored,
not refused); the operator's token and the open single-user mode keep the spec's self-declared author. The agent
signs its own work "agent on behalf of <username>" for the user who wrote the message.
"""

from __future__ import annotations

from dataclasses import dataclass

from api.principal import Principal
from core.provenance import AGENT_AUTHOR, DEFAULT_AUTHOR


@dataclass(frozen=True)
class Signature:
    author: str
    verified: bool = False  # the author is an account's username, not the caller's word


def signature_of(principal: Principal | None, declared: str | None = None) -> Signature:
    """The signature of a record a principal writes; `declared` is the request's self-declared author."""
    if principal is not None and principal.has_account:
        return Signature(principal.name, verified=True)
    return Signature((declared or "").strip() or DEFAULT_AUTHOR)


def agent_signature(principal: Principal | None) -> Signature:
    """The signature of what the agent does for the user who wrote the message."""
    if principal is not None and principal.has_account:
        return Signature(f"{AGENT_AUTHOR} on behalf of {principal.name}", verified=True)
    return Signature(AGENT_AUTHOR)


def signed_by(request, declared: str | None = None) -> Signature:
    """The signature of the record a request writes."""
    return signature_of(Principal.of(request), declared)
