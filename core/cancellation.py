"""Stopping a long use case at its commit points when the one who started it gave up (an aborted chat turn).

A caller that can give up runs the use case inside `cancellable()`; the use case marks its commit points with
`commit(what)` (the change happens inside the block), records what an outside service committed with
`record(what)`, and may `check()` before expensive steps. `cancel()` and a
commit exclude each other, so after `cancel()` returns the caller knows exactly what was committed and that nothing
more will be. Outside `cancellable()` (a REST request) all of this is a no-op."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar


class Cancelled(Exception):
    """The caller gave up: the use case stops before its next commit point."""


class CancelGuard:
    def __init__(self):
        self._lock = threading.Lock()
        self._cancelled = False
        self.committed: list[str] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> list[str]:
        """Stops every later commit; returns what was committed before."""
        with self._lock:
            self._cancelled = True
            return list(self.committed)

    def check(self) -> None:
        if self._cancelled:
            raise Cancelled("stopped: the caller gave up")

    @contextmanager
    def commit(self, what: str):
        with self._lock:
            self.check()
            yield
            self.committed.append(what)

    def record(self, what: str) -> None:
        """Something was committed elsewhere (the edit service saved a version): it is part of what was committed,
        cancelled or not."""
        with self._lock:
            self.committed.append(what)


_current: ContextVar[CancelGuard | None] = ContextVar("cancel_guard", default=None)


@contextmanager
def cancellable(guard: CancelGuard):
    token = _current.set(guard)
    try:
        yield guard
    finally:
        _current.reset(token)


def check() -> None:
    guard = _current.get()
    if guard is not None:
        guard.check()


def record(what: str) -> None:
    guard = _current.get()
    if guard is not None:
        guard.record(what)


@contextmanager
def commit(what: str):
    guard = _current.get()
    if guard is None:
        yield
        return
    with guard.commit(what):
        yield
