"""The life of a durable job, one implementation for every kind: claim, progress, finish, and the run of a task
(take). Queueing a task is core.jobs.tasks, the recovery of jobs whose worker died core.jobs.recovery."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import models, transaction
from django.utils import timezone

from core.identity import process_identity
from core.jobs.kinds import AGAIN, JobKind, kind_of

PROGRESS_WRITE_INTERVAL = 1.0


def with_updated_at(model: type[models.Model], fields: dict) -> dict:
    """update() skips auto_now: a model that keeps updated_at gets it here."""
    if any(field.name == "updated_at" for field in model._meta.concrete_fields):
        return {"updated_at": timezone.now(), **fields}
    return fields


def claim(kind: JobKind | str, candidates: models.QuerySet, *, in_turn: bool = False) -> models.Model | None:
    """Marks the first queued job of candidates running under this process, in one short transaction; None when
    there is none (deleted meanwhile, taken already). A kind with turns skips rows another worker is claiming.
    in_turn: the first in the kind's order (claimable), which is only asked for when two or more jobs wait."""
    kind = kind_of(kind)
    with transaction.atomic():
        queued = candidates.filter(**{kind.state_field: kind.queued})
        if in_turn:
            queued = _first_in_turn(kind, queued)
        job = (queued.select_for_update(skip_locked=True, of=("self",)) if kind.turns else queued.select_for_update(of=("self",))).first()
        if job is None:
            return None
        now = timezone.now()
        fields = {kind.state_field: kind.running, kind.worker_field: process_identity(), "heartbeat_at": now,
                  "attempts": job.attempts + 1, "progress_phase": "starting", "progress_percent": 0, **kind.claimed_fields()}
        for name, value in fields.items():
            setattr(job, name, value)
        job.save(update_fields=list(with_updated_at(kind.model, fields)))
        return job


def _first_in_turn(kind: JobKind, queued: models.QuerySet) -> models.QuerySet:
    """The queued jobs in the kind's order; with at most one waiting, that one without the order's query (the fair
    order of the checks is ~1 ms of building and running a query with subqueries, on the path of every check)."""
    waiting = list(queued.values_list("pk", flat=True)[:2])
    return queued.filter(pk__in=waiting) if len(waiting) < 2 else kind.claimable(queued)


def _still_running(kind: JobKind, job: models.Model) -> models.QuerySet:
    """The job's row while this worker still holds it (recovery did not give it to another worker)."""
    return kind.model.objects.filter(pk=job.pk, **{kind.state_field: kind.running, kind.worker_field: getattr(job, kind.worker_field)})


def progress_writer(kind: JobKind | str, job: models.Model) -> Callable[[str, int], None]:
    """The job's on_progress(phase, percent): writes the phase (trimmed to its column) and the percent (clamped to
    0..100) with a heartbeat at most once per PROGRESS_WRITE_INTERVAL, and always the final "done"."""
    kind = kind_of(kind)
    phase_length = kind.model._meta.get_field("progress_phase").max_length
    last_write = float("-inf")  # the first write goes through

    def on_progress(phase: str, percent: int) -> None:
        nonlocal last_write
        now = time.monotonic()
        if now - last_write >= PROGRESS_WRITE_INTERVAL or phase == "done":
            _still_running(kind, job).update(progress_phase=phase[:phase_length], progress_percent=max(0, min(100, percent)), heartbeat_at=timezone.now())
            last_write = now

    return on_progress


def finish(kind: JobKind | str, job: models.Model, **fields) -> bool:
    """Records the end of this worker's run with fields (the end state, error, result...), unless recovery gave the
    job to another worker meanwhile. Returns whether it was recorded."""
    kind = kind_of(kind)
    return bool(_still_running(kind, job).update(**with_updated_at(kind.model, {kind.worker_field: "", **kind.done_fields(), **fields})))


def run(kind: JobKind | str, job: models.Model) -> None:
    """Runs a claimed job, again as long as the kind's run answers AGAIN."""
    kind = kind_of(kind)
    while kind.run(job) == AGAIN:
        try:
            job.refresh_from_db()
        except kind.model.DoesNotExist:
            return


def take(kind: JobKind | str, *key) -> models.Model | None:
    """The task of a job: claims the job named by key (for a kind with turns, the first queued job in the kind's
    order) and runs it. Returns the job run, None when there was nothing to run."""
    kind = kind_of(kind)
    candidates = kind.model.objects.all()
    job = claim(kind, candidates, in_turn=True) if kind.turns else claim(kind, candidates.filter(**dict(zip(kind.key, key))))
    if job is not None:
        run(kind, job)
    return job
