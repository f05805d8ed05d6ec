"""A task worker process: django-tasks' db_worker on one queue, plus a thread that keeps recovering the jobs of
workers that died (every job kind on the queue; not only at the next start). Conversion and IDS check workers are
both this."""

from __future__ import annotations

import logging
import threading
import time

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connections

from core.jobs import recovery
from core.jobs.kinds import kinds_on

logger = logging.getLogger(__name__)


class QueueWorkerCommand(BaseCommand):
    queue_name: str
    what: str  # "conversions", "IDS checks"

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
        call_command("db_worker", queue_name=self.queue_name, interval=options["interval"], startup_delay=False)
