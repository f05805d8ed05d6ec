"""The registry of job kinds: each app describes its kinds of job rows here from its AppConfig.ready()."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from django.db import models
from django.utils.module_loading import import_string

from core.jobs.queues import QUEUES

AGAIN = "again"  # JobKind.run's answer when the job must run once more under the same claim (its input changed)


def on_first_call(path: str) -> Callable:
    """The function at a dotted path, imported when it is first called: a kind's use cases (and the engines they
    import) load in the process that runs its jobs, not in every process that registers the kind.

        register(JobKind(name="check", ..., run=on_first_call("checks_app.services.check_claimed_run")))
    """
    function = None

    def call(*args, **kwargs):
        nonlocal function
        if function is None:
            function = import_string(path)
        return function(*args, **kwargs)

    call.__qualname__ = call.__name__ = path
    return call


def _unchanged(queryset: models.QuerySet) -> models.QuerySet:
    return queryset


def _nothing(job) -> Iterable[Path]:
    return ()


@dataclass(frozen=True)
class JobKind:
    """A kind of durable job: rows of `model` whose `state_field` moves queued -> running -> (the kind's end states).

    run(job) does the work of a claimed job and ends it with lifecycle.finish(); it returns AGAIN to be called again
    under the same claim. key names the fields that identify a job in its task's arguments. claimable(queryset)
    filters and orders what a worker may take (a fair order, say); with turns, a task is a turn that takes whichever
    queued job claimable() puts first instead of the job it was enqueued for. recoverable(queryset) selects the rows
    recovery looks at (default: queued and running). failed_fields are written, with the error, when the attempts
    are used up; done_fields() whenever a run ends (finish or give-up). died_message is formatted with attempts."""

    name: str
    queue: str
    model: type[models.Model]
    run: Callable[[models.Model], str | None]
    key: tuple[str, ...]
    failed_fields: dict
    died_message: str
    state_field: str = "status"
    queued: str = "queued"
    running: str = "running"
    worker_field: str = "worker"
    max_attempts: int = 3
    stale_heartbeat_seconds: float = 300
    turns: bool = False
    claimable: Callable[[models.QuerySet], models.QuerySet] = _unchanged
    recoverable: Callable[[models.QuerySet], models.QuerySet] | None = None
    claimed_fields: Callable[[], dict] = dict
    done_fields: Callable[[], dict] = dict
    leftovers: Callable[[models.Model], Iterable[Path]] = _nothing

    def args_of(self, job: models.Model) -> list:
        return [getattr(job, name) for name in self.key]

    def name_of(self, job: models.Model) -> str:
        return "/".join(str(value) for value in self.args_of(job))


_kinds: dict[str, JobKind] = {}


def register(kind: JobKind) -> JobKind:
    """Adds a kind (from an AppConfig.ready(); registering the same name again replaces it)."""
    if kind.queue not in QUEUES:
        raise ValueError(f"job kind {kind.name}: queue {kind.queue!r} has no task in core.jobs.tasks (known: {', '.join(QUEUES)})")
    _kinds[kind.name] = kind
    return kind


def kind_named(name: str) -> JobKind:
    try:
        return _kinds[name]
    except KeyError:
        raise LookupError(f"no job kind {name!r} is registered (known: {', '.join(_kinds) or 'none'})") from None


def kind_of(kind: JobKind | str) -> JobKind:
    """The kind itself, or the registered kind of that name."""
    return kind if isinstance(kind, JobKind) else kind_named(kind)


def kinds_on(queue: str) -> list[JobKind]:
    """The kinds whose jobs run on the queue, in the order they were registered."""
    return [kind for kind in _kinds.values() if kind.queue == queue]
