"""Blocking calls from the chat's asynchronous code (the turn lifecycle, the agent loop)."""

from __future__ import annotations

from asgiref.sync import sync_to_async


def in_thread(function):
    """A blocking call run off the event loop."""
    return sync_to_async(function, thread_sensitive=False)
