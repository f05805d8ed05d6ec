"""A task worker process: django-tasks' db_worker on one queue, plus a thread that keeps re-queuing the work of
workers that died while this one runs (not only at the next start). Conversion and IDS check workers are both this."""

from __future__ import annotations

import logging
import threading
import time

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connections

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
        """Re-queues the work of dead workers; returns its ids."""
        raise NotImplementedError

    def periodic(self) -> None:
        """What the watcher thread does every recovery interval."""
        self.recover()

    def _watch(self, interval: float) -> None:
        while True:
            time.sleep(interval)
            try:
                self.periodic()
            except Exception:  # noqa: BLE001 - the watcher must survive a database hiccup
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
