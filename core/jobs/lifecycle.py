"""The life of a durable job, one implementation for every kind: enqueue, claim, progress, finish, and the recovery
of jobs whose worker died (queued again up to the kind's attempt cap, then failed)."""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable

from django.db import models, transaction
from django.utils import timezone

from core.identity import process_alive, process_identity
from core.jobs.kinds import AGAIN, JobKind, kind_named

logger = logging.getLogger(__name__)

PROGRESS_WRITE_INTERVAL = 1.0


def _kind(kind: JobKind | str) -> JobKind:
    return kind if isinstance(kind, JobKind) else kind_named(kind)


def enqueue(kind: JobKind | str, *key) -> None:
    """Queues a task for the job named by key (inside the transaction that made the row queued: both or neither)."""
    from core.jobs.tasks import QUEUE_TASKS

    kind = _kind(kind)
    QUEUE_TASKS[kind.queue].enqueue(kind.name, *key)


def waiting_args(kind: JobKind | str) -> list[list]:
    """The keys of the kind's enqueued tasks that no worker has taken yet (one entry per task)."""
    from django_tasks_db.models import DBTaskResult

    from core.jobs.tasks import QUEUE_TASKS

    kind = _kind(kind)
    waiting = DBTaskResult.objects.ready().filter(task_path=QUEUE_TASKS[kind.queue].module_path).values_list("args_kwargs", flat=True)
    return [args[1:] for args in (args_kwargs.get("args") or [] for args_kwargs in waiting) if args and args[0] == kind.name]


def _with_updated_at(model: type[models.Model], fields: dict) -> dict:
    """update() skips auto_now: a model that keeps updated_at gets it here."""
    if any(field.name == "updated_at" for field in model._meta.concrete_fields):
        return {"updated_at": timezone.now(), **fields}
    return fields


def claim(kind: JobKind | str, candidates: models.QuerySet) -> models.Model | None:
    """Marks the first queued job of candidates running under this process, in one short transaction; None when
    there is none (deleted meanwhile, taken already). A kind with turns skips rows another worker is claiming."""
    kind = _kind(kind)
    with transaction.atomic():
        queued = candidates.filter(**{kind.state_field: kind.queued})
        job = (queued.select_for_update(skip_locked=True, of=("self",)) if kind.turns else queued.select_for_update(of=("self",))).first()
        if job is None:
            return None
        now = timezone.now()
        fields = {kind.state_field: kind.running, kind.worker_field: process_identity(), "heartbeat_at": now,
                  "attempts": job.attempts + 1, "progress_phase": "starting", "progress_percent": 0, **kind.claimed_fields()}
        for name, value in fields.items():
            setattr(job, name, value)
        job.save(update_fields=list(_with_updated_at(kind.model, fields)))
        return job


def _still_running(kind: JobKind, job: models.Model) -> models.QuerySet:
    """The job's row while this worker still holds it (recovery did not give it to another worker)."""
    return kind.model.objects.filter(pk=job.pk, **{kind.state_field: kind.running, kind.worker_field: getattr(job, kind.worker_field)})


def progress_writer(kind: JobKind | str, job: models.Model) -> Callable[[str, int], None]:
    """The job's on_progress(phase, percent): writes the phase (trimmed to its column) and the percent (clamped to
    0..100) with a heartbeat at most once per PROGRESS_WRITE_INTERVAL, and always the final "done"."""
    kind = _kind(kind)
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
    kind = _kind(kind)
    return bool(_still_running(kind, job).update(**_with_updated_at(kind.model, {kind.worker_field: "", **kind.done_fields(), **fields})))


def run(kind: JobKind | str, job: models.Model) -> None:
    """Runs a claimed job, again as long as the kind's run answers AGAIN."""
    kind = _kind(kind)
    while kind.run(job) == AGAIN:
        try:
            job.refresh_from_db()
        except kind.model.DoesNotExist:
            return


def take(kind: JobKind | str, *key) -> models.Model | None:
    """The task of a job: claims the job named by key (for a kind with turns, the first queued job in the kind's
    order) and runs it. Returns the job run, None when there was nothing to run."""
    kind = _kind(kind)
    candidates = kind.model.objects.all()
    job = claim(kind, kind.claimable(candidates) if kind.turns else candidates.filter(**dict(zip(kind.key, key))))
    if job is not None:
        run(kind, job)
    return job


def _remove_leftovers(kind: JobKind, job: models.Model) -> None:
    for leftover in kind.leftovers(job):
        shutil.rmtree(leftover, ignore_errors=True)


def recover(kind: JobKind | str) -> list[str]:
    """Jobs whose worker died are queued again, at most max_attempts runs, then failed with the kind's died_message;
    queued jobs whose task was lost get a task again (a kind with turns: turns are added for queued jobs none is
    named after, as many as are missing). Returns the names (key values joined by "/") of the jobs given a task."""
    kind = _kind(kind)
    state, worker_field = kind.state_field, kind.worker_field
    rows = kind.model.objects.all()
    rows = kind.recoverable(rows) if kind.recoverable else rows.filter(**{f"{state}__in": (kind.queued, kind.running)})
    waiting = {tuple(args) for args in waiting_args(kind)}
    recovered = []
    for job in rows:
        job_state, worker = getattr(job, state), getattr(job, worker_field)
        if job_state == kind.running and process_alive(worker, job.heartbeat_at, kind.stale_heartbeat_seconds):
            continue
        if job_state == kind.queued and (kind.turns or tuple(kind.args_of(job)) in waiting):
            continue
        with transaction.atomic():
            still = kind.model.objects.filter(pk=job.pk, **{state: job_state, worker_field: worker})
            if job_state == kind.running and job.attempts >= kind.max_attempts:
                gave_up = {**kind.failed_fields, "error": kind.died_message.format(attempts=job.attempts), worker_field: "",
                           "progress_phase": "", "progress_percent": 0, **kind.done_fields()}
                if still.update(**_with_updated_at(kind.model, gave_up)):
                    logger.warning("%s %s failed: its worker died %d times", kind.name, kind.name_of(job), job.attempts)
                    _remove_leftovers(kind, job)
                continue
            requeued = {state: kind.queued, worker_field: "", "progress_phase": "queued", "progress_percent": 0}
            if not still.update(**requeued):
                continue
            enqueue(kind, *kind.args_of(job))
        recovered.append(kind.name_of(job))
        _remove_leftovers(kind, job)
    if kind.turns:
        recovered += _add_missing_turns(kind)
    for name in recovered:
        logger.warning("re-queued interrupted %s %s", kind.name, name)
    return recovered


def _add_missing_turns(kind: JobKind) -> list[str]:
    """A turn too many is harmless (it finds nothing queued); too few leave a queued job waiting for good."""
    turns = [tuple(args) for args in waiting_args(kind)]
    queued = list(kind.model.objects.filter(**{kind.state_field: kind.queued}).order_by("created_at"))
    named = set(turns)
    added = []
    for job in [job for job in queued if tuple(kind.args_of(job)) not in named][:max(len(queued) - len(turns), 0)]:
        enqueue(kind, *kind.args_of(job))
        added.append(kind.name_of(job))
    return added
