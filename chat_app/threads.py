"""Blocking calls from the chat's asynchronous code (the turn lifecycle, the agent loop, the event stream).

    frame = await in_thread(lifecycle.run)(work)
"""

from __future__ import annotations

from functools import wraps

from asgiref.sync import sync_to_async
from django.db import close_old_connections


def in_thread(function):
    """A blocking call run off the event loop, on a thread of the loop's pool. Those threads outlive every request, so
    each call gets the care Django gives a request's database connection: the thread's connection is dropped before and
    after the call when it is past CONN_MAX_AGE or broken (a database restart), and CONN_HEALTH_CHECKS checks it again
    before its next reuse. Without it a pool thread kept its first connection for ever, a dead one included."""

    @wraps(function)
    def with_connection_care(*args, **kwargs):
        close_old_connections()
        try:
            return function(*args, **kwargs)
        finally:
            close_old_connections()

    return sync_to_async(with_connection_care, thread_sensitive=False)
