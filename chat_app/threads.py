"""Blocking calls from the chat's asynchronous code (the turn lifecycle, the agent loop, the event stream).

    frame = await in_thread(lifecycle.run)(work)
"""

from __future__ import annotations

import threading
import time
from functools import wraps

from asgiref.sync import sync_to_async
from django.db import close_old_connections

# how often a pool thread's database connection is looked at (Django does it per request; with CONN_HEALTH_CHECKS
# each look costs the connection's next use a round trip, and a running turn polls its abort flag ten times a second)
CONNECTION_CARE_SECONDS = 5.0

_cared = threading.local()


def in_thread(function):
    """A blocking call run off the event loop, on a thread of the loop's pool, with its connection cared for
    (with_connection_care)."""
    return sync_to_async(with_connection_care(function), thread_sensitive=False)


def with_connection_care(function):
    """The call as a pool thread makes it. Those threads outlive every request, so the calls get the care Django gives
    a request's database connection, at most every CONNECTION_CARE_SECONDS per thread: the thread's connection is
    dropped before a call when it is past CONN_MAX_AGE or broken (a database restart: a failed query marks it), and
    CONN_HEALTH_CHECKS checks it before its next reuse. Without it a pool thread kept its first connection for ever,
    a dead one included."""

    @wraps(function)
    def cared_for(*args, **kwargs):
        now = time.monotonic()
        if now - getattr(_cared, "at", float("-inf")) >= CONNECTION_CARE_SECONDS:
            close_old_connections()
            _cared.at = now
        return function(*args, **kwargs)

    return cared_for
