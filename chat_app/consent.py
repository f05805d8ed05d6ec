"""Permission requests: an irreversible tool runs only after the user allowed the call (question.ask with kind
permission). The options offered and how an answer is read; the agent asks (agent/loop.py), the answer is checked
when it is posted (services.question_answer)."""

from __future__ import annotations

import re

PERMISSION_OPTIONS = [
    {"label": "once", "description": "allow this call"},
    {"label": "always", "description": "allow this tool for the rest of the session"},
    {"label": "reject", "description": "do not run it; 'reject: <reason>' tells the agent why"},
]
PERMISSION_ANSWER = re.compile(r"^\s*(once|always|reject)\s*(?::\s*(.*))?$", re.IGNORECASE | re.DOTALL)


def parse_permission_answer(answer: str) -> tuple[str, str] | None:
    """(decision, reason) of an answer to a permission request: once, always, or reject with an optional reason."""
    match = PERMISSION_ANSWER.match(answer or "")
    return (match.group(1).lower(), (match.group(2) or "").strip()) if match else None
