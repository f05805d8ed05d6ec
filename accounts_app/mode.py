"""Whether the gateway is in the accounts mode (docs/security/roles.md#the-three-modes): from the first user on, and
for good. A marker file in the data directory says so without a database query, so the edge can refuse a request
that carries no credential before reading its body (viewer_gateway/edge.py); disabling or deleting every user does
not reopen the open mode (only the operator's token gets in then, or a new user made with `manage.py user`).

The rule, for one gateway or several sharing the data directory (docs/operations/scaling-out.md):

- the marker is authoritative once it exists, and looked at on every call (one stat), so a gateway sees the first
  user another process made at once: every way of making a user writes the marker (accounts_app/apps.py, a
  post_save receiver, before the user's transaction commits);
- while there is no marker, the users table is asked too, for users made before the marker existed (an upgrade, a
  restored database), at most once per RECHECK_SECONDS per process; a user found writes the marker. Only a user
  that got into the table without the marker (which no supported way of making one does) can go unseen, and for
  RECHECK_SECONDS at most.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model

MARKER_NAME = "accounts-enabled"
RECHECK_SECONDS = 1.0

_no_users_seen_at: float | None = None  # time.monotonic() of this process's last users query that found none


def _marker() -> str:
    return os.path.join(settings.DATA_DIR, MARKER_NAME)  # not pathlib: asked 2-3 times per request, 3x the cost


def accounts_marked() -> bool:
    """The marker alone: no database (the edge's question)."""
    return os.path.exists(_marker())


def accounts_mark() -> None:
    Path(_marker()).touch(exist_ok=True)


def accounts_enabled() -> bool:
    global _no_users_seen_at
    if accounts_marked():
        return True
    if _no_users_seen_at is not None and time.monotonic() - _no_users_seen_at < RECHECK_SECONDS:
        return False
    asked_at = time.monotonic()
    if get_user_model().objects.exists():  # users made before the marker existed (an upgrade, a restored database)
        accounts_mark()
        return True
    _no_users_seen_at = asked_at
    return False
