import logging
import threading
import time

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connections

from models_app import services
from models_app.tasks import CONVERSION_QUEUE

logger = logging.getLogger(__name__)


def watch_for_interrupted_conversions(interval: float) -> None:
    """Re-queues conversions of workers that died while this one keeps running (not only at the next start)."""
    while True:
        time.sleep(interval)
        try:
            services.recover_interrupted_conversions()
        except Exception:  # noqa: BLE001 - the watcher must survive a database hiccup
            logger.exception("checking for interrupted conversions failed")
        finally:
            connections.close_all()


class Command(BaseCommand):
    help = "Runs one conversion worker (IFC -> XKT + metadata.json); resumes conversions interrupted by a crash."

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=0.5, help="seconds between polls of an empty queue")
        parser.add_argument("--recovery-interval", type=float, default=15, help="seconds between checks for dead workers")

    def handle(self, *args, **options):
        services.remove_deleted_model_leftovers()
        recovered = services.recover_interrupted_conversions()
        if recovered:
            self.stdout.write(f"re-queued interrupted conversions: {', '.join(recovered)}")
        threading.Thread(target=watch_for_interrupted_conversions, args=(options["recovery_interval"],), daemon=True).start()
        call_command("db_worker", queue_name=CONVERSION_QUEUE, interval=options["interval"], startup_delay=False)
