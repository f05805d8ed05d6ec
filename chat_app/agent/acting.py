"""The agent acts as the user who wrote the message: every tool call is decided by accounts_app.policy with that
user's principal and the capability the tool declares (the one its REST route needs), and what the agent writes is
signed "agent on behalf of <username>".

The user is stored with the turn (Turn.user_id, Turn.username) and the principal rebuilt from the account at each
call, so a membership removed or a role lowered during a session, or an account disabled or deleted, refuses the
next call. A turn no account wrote (the operator's token, the open single-user mode) acts as before: unrestricted,
signed "agent".
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model

from accounts_app.identity import user_principal
from accounts_app.policy import Scope, decide
from api.principal import Principal
from api.signatures import Signature, agent_signature
from chat_app.agent.tools import Tool, ToolError
from chat_app.selectors import session_scope
from models_app.access_scopes import model_scope, project_scope


@dataclass(frozen=True)
class ActingUser:
    """The account that wrote the turn's message."""

    user_id: int
    username: str


def acting_user_of(turn) -> ActingUser | None:
    return ActingUser(turn.user_id, turn.username or "") if turn.user_id is not None else None


def principal_of(acting: ActingUser) -> Principal | None:
    """The user's principal as it stands now; None when the account is disabled or deleted."""
    user = get_user_model().objects.filter(pk=acting.user_id, is_active=True).first()
    if user is None:
        return None
    return user_principal(user)


def signature_for(acting: ActingUser | None) -> Signature:
    """What the agent's own records are signed with."""
    if acting is None:
        return agent_signature(None)
    return agent_signature(Principal(name=acting.username, user_id=acting.user_id))


def call_scope(session_id: str, project_id: str | None, model_id: str | None) -> Scope:
    """Where a call lands: its model, else the session's project, else the session's own scope."""
    if model_id:
        return model_scope(model_id)
    return project_scope(project_id) if project_id else session_scope(session_id)


def require_tool(acting: ActingUser | None, tool: Tool, *, session_id: str, project_id: str | None, model_id: str | None) -> None:
    """Refuses (ToolError, which the model reads) a call the user who wrote the message may not make."""
    if acting is None or tool.capability is None:
        return
    principal = principal_of(acting)
    if principal is None:
        raise ToolError(f"refused: the account {acting.username!r} that wrote this message is disabled or deleted, so the agent may not act for it")
    decision = decide(principal, tool.capability, call_scope(session_id, project_id, model_id))
    if not decision.allowed:
        raise ToolError(f"refused: {tool.name} needs the {tool.capability} right, and {principal.name} (for whom you act) does not have it "
                        f"here: {decision.message}. Tell the user; do not try another way around it.")
