"""One django-tasks task per queue (core.jobs.queues names them): a task names the job kind and the job's key, and
runs it through lifecycle.take. Queueing a job's task and reading the tasks still waiting live here too. A new queue
adds its name to core.jobs.queues and a task here."""

from __future__ import annotations

from functools import partial

from django.db import router, transaction
from django_tasks import task

from core.jobs import lifecycle, wakeup
from core.jobs.kinds import JobKind, kind_of
from core.jobs.queues import CHECK_QUEUE, CLASH_QUEUE, CONVERSION_QUEUE, QUEUES

__all__ = ["CHECK_QUEUE", "CLASH_QUEUE", "CONVERSION_QUEUE", "QUEUE_TASKS", "checks_job", "clashes_job", "conversions_job", "enqueue", "waiting_args"]


@task(queue_name=CONVERSION_QUEUE)
def conversions_job(kind_name: str, *key) -> None:
    lifecycle.take(kind_name, *key)


@task(queue_name=CHECK_QUEUE)
def checks_job(kind_name: str, *key) -> None:
    lifecycle.take(kind_name, *key)


@task(queue_name=CLASH_QUEUE)
def clashes_job(kind_name: str, *key) -> None:
    lifecycle.take(kind_name, *key)


QUEUE_TASKS = {CONVERSION_QUEUE: conversions_job, CHECK_QUEUE: checks_job, CLASH_QUEUE: clashes_job}
assert set(QUEUE_TASKS) == set(QUEUES), "every queue in core.jobs.queues needs its task here"


def enqueue(kind: JobKind | str, *key) -> None:
    """Queues a task for the job named by key (inside the transaction that made the row queued: both or neither);
    the queue's idle workers on this host are woken once the task is committed."""
    from django_tasks_db.models import DBTaskResult

    kind = kind_of(kind)
    QUEUE_TASKS[kind.queue].enqueue(kind.name, *key)
    transaction.on_commit(partial(wakeup.wake, kind.queue), using=router.db_for_write(DBTaskResult), robust=True)


def waiting_args(kind: JobKind | str) -> list[list]:
    """The keys of the kind's enqueued tasks that no worker has taken yet (one entry per task)."""
    from django_tasks_db.models import DBTaskResult

    kind = kind_of(kind)
    waiting = DBTaskResult.objects.ready().filter(task_path=QUEUE_TASKS[kind.queue].module_path).values_list("args_kwargs", flat=True)
    return [args[1:] for args in (args_kwargs.get("args") or [] for args_kwargs in waiting) if args and args[0] == kind.name]
