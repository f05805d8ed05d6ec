"""The agent's tools, registered explicitly: each `*_tools` module below declares its tools when it is imported
(`agent_tool` in tools.py), and this module imports every one of them by name. A new tool module is added here."""

from __future__ import annotations

from chat_app.agent import (  # noqa: F401 - imported for their tool declarations
    check_tools,
    clash_tools,
    delegate_tools,
    element_tools,
    plan_tools,
    review_tools,
    script_tools,
    session_tools,
)
from chat_app.agent.tools import REGISTRY, Tool


def all_tools() -> dict[str, Tool]:
    """Every declared tool."""
    return dict(REGISTRY)
