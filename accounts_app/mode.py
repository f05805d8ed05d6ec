"""Whether the gateway is in the accounts mode (docs/security/roles.md#the-three-modes): from the first user on, and
for good. A marker file in the data directory says so without a database query, so the edge can refuse a request
that carries no credential before reading its body (viewer_gateway/edge.py); disabling or deleting every user does
not reopen the open mode (only the operator's token gets in then, or a new user made with `manage.py user`)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model

MARKER_NAME = "accounts-enabled"


def _marker() -> Path:
    return Path(settings.DATA_DIR) / MARKER_NAME


def accounts_marked() -> bool:
    """The marker alone: no database (the edge's question)."""
    return _marker().exists()


def accounts_mark() -> None:
    _marker().touch(exist_ok=True)


def accounts_enabled() -> bool:
    if accounts_marked():
        return True
    if get_user_model().objects.exists():  # users made before the marker existed (an upgrade, a restored database)
        accounts_mark()
        return True
    return False
