"""A task worker process: django-tasks' db_worker loop on one queue, woken as soon as a task of the queue is enqueued
on this host (core.jobs.wakeup), plus a thread that keeps recovering the jobs of workers that died (every job kind on
the queue; not only at the next start). Conversion, IDS check and clash workers are all this."""

from __future__ import annotations

import logging
import threading
import time

from django.core.checks import Tags
from django.core.management.base import BaseCommand
from django.db import connections
from django.utils.crypto import get_random_string
from django_tasks_db.compat import DEFAULT_TASK_BACKEND_ALIAS
from django_tasks_db.management.commands.db_worker import Command as DBWorkerCommand
from django_tasks_db.management.commands.db_worker import Worker

from core.jobs import recovery
from core.jobs.kinds import kinds_on
from core.jobs.wakeup import WakeUp
from core.system_checks import CONFIGURATION_TAG

logger = logging.getLogger(__name__)


class WakeableWorker(Worker):
    """django-tasks' worker loop, which sleeps `time.sleep(self.interval)` when the queue is empty and reads the
    interval nowhere else once started without a startup delay. Reading it is the hook: it waits for a wake-up, at
    most the interval, and leaves nothing to sleep."""

    def __init__(self, *, wake_up: WakeUp, **options):
        self.wake_up = wake_up
        super().__init__(**options)

    @property
    def interval(self) -> float:
        self.wake_up.wait(self._interval)
        return 0

    @interval.setter
    def interval(self, value: float) -> None:
        self._interval = value


class QueueWorkerCommand(BaseCommand):
    queue_name: str
    what: str  # "conversions", "IDS checks"
    # The configuration's checks (a bad configuration stops a worker as it stops the gateway) and the models'; not the
    # URL configuration's, the admin's or the templates', which are the gateway's to serve and check (importing every
    # view for them was half of a worker's start: ~0.4 s of processor time). django-tasks' own check of TASKS (it
    # registers it without a tag) is the gateway's too: TASKS is fixed in viewer_gateway/settings.py.
    requires_system_checks = [CONFIGURATION_TAG, Tags.models]

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=0.5, help="seconds between polls of an empty queue")
        parser.add_argument("--recovery-interval", type=float, default=15, help="seconds between checks for dead workers")

    def prepare(self) -> None:
        """Startup work before the first task (checks of the environment, warm processes)."""

    def recover(self) -> list[str]:
        """Recovers the jobs of dead workers of every kind on the queue; returns the names of those given a task."""
        return [name for kind in kinds_on(self.queue_name) for name in recovery.recover(kind)]

    def periodic(self) -> None:
        """What the watcher thread does every recovery interval."""
        self.recover()

    def _watch(self, interval: float) -> None:
        while True:
            time.sleep(interval)
            try:
                self.periodic()
            except Exception:
                logger.exception("checking for interrupted %s failed", self.what)
            finally:
                connections.close_all()

    def handle(self, *args, **options):
        self.prepare()
        recovered = self.recover()
        if recovered:
            self.stdout.write(f"re-queued interrupted {self.what}: {', '.join(recovered)}")
        threading.Thread(target=self._watch, args=(options["recovery_interval"],), daemon=True).start()
        DBWorkerCommand(stdout=self.stdout, stderr=self.stderr).configure_logging(options["verbosity"])
        wake_up = WakeUp(self.queue_name)
        worker = WakeableWorker(wake_up=wake_up, queue_names=[self.queue_name], interval=options["interval"], batch=False,
                                backend_name=DEFAULT_TASK_BACKEND_ALIAS, startup_delay=False, max_tasks=None,
                                worker_id=get_random_string(32), excluded_queue_names=[])
        worker.configure_signals()
        try:
            worker.run()
        finally:
            wake_up.close()
