"""The recovery of jobs whose worker died: queued again up to the kind's attempt cap, then failed; queued jobs whose
task was lost get a task again. Worker processes run it at their start and every recovery interval."""

from __future__ import annotations

import logging
import shutil

from django.db import models, transaction

from core.identity import process_alive
from core.jobs.kinds import JobKind, kind_of
from core.jobs.lifecycle import with_updated_at
from core.jobs.tasks import enqueue, waiting_args

logger = logging.getLogger(__name__)


def _remove_leftovers(kind: JobKind, job: models.Model) -> None:
    for leftover in kind.leftovers(job):
        shutil.rmtree(leftover, ignore_errors=True)


def recover(kind: JobKind | str) -> list[str]:
    """Jobs whose worker died are queued again, at most max_attempts runs, then failed with the kind's died_message;
    queued jobs whose task was lost get a task again (a kind with turns: turns are added for queued jobs none is
    named after, as many as are missing). Returns the names (key values joined by "/") of the jobs given a task."""
    kind = kind_of(kind)
    state, worker_field = kind.state_field, kind.worker_field
    rows = kind.model.objects.all()
    rows = kind.recoverable(rows) if kind.recoverable else rows.filter(**{f"{state}__in": (kind.queued, kind.running)})
    waiting = {tuple(args) for args in waiting_args(kind)}
    recovered, given_a_task = [], []
    for job in rows:
        job_state, worker = getattr(job, state), getattr(job, worker_field)
        if job_state == kind.running and process_alive(worker, job.heartbeat_at, kind.stale_heartbeat_seconds):
            continue
        if job_state == kind.queued:
            if not kind.turns and tuple(kind.args_of(job)) not in waiting:
                # its task lost, or taken by a worker that is about to claim the job: given a task again, nothing
                # else (a task too many finds the job claimed); its folders may be that worker's run starting
                enqueue(kind, *kind.args_of(job))
                given_a_task.append(kind.name_of(job))
            continue
        with transaction.atomic():
            still = kind.model.objects.filter(pk=job.pk, **{state: job_state, worker_field: worker})
            if job_state == kind.running and job.attempts >= kind.max_attempts:
                gave_up = {**kind.failed_fields, "error": kind.died_message.format(attempts=job.attempts), worker_field: "",
                           "progress_phase": "", "progress_percent": 0, **kind.done_fields()}
                if still.update(**with_updated_at(kind.model, gave_up)):
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
        given_a_task += _add_missing_turns(kind)
    for name in recovered:
        logger.warning("re-queued interrupted %s %s", kind.name, name)
    for name in given_a_task:
        logger.info("gave queued %s %s a task again: none was waiting (lost, or taken by a worker about to claim it)", kind.name, name)
    return recovered + given_a_task


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
