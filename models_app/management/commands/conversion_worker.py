import logging
import threading
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connections

from models_app import services
from models_app.tasks import CONVERSION_QUEUE
from viewer_gateway.config import require_converter

logger = logging.getLogger(__name__)


def watch_conversions(interval: float) -> None:
    """Re-queues conversions of workers that died while this one keeps running (not only at the next start), and
    converts IFCs the edit service replaced without the gateway knowing."""
    while True:
        time.sleep(interval)
        try:
            services.recover_interrupted_conversions()
            services.reconvert_changed_products()
        except Exception:  # noqa: BLE001 - the watcher must survive a database hiccup
            logger.exception("checking conversions failed")
        finally:
            connections.close_all()


class Command(BaseCommand):
    help = "Runs one conversion worker (IFC -> XKT + metadata.json); resumes conversions interrupted by a crash."

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=0.5, help="seconds between polls of an empty queue")
        parser.add_argument("--recovery-interval", type=float, default=15, help="seconds between checks for dead workers and IFCs changed outside the gateway")

    def handle(self, *args, **options):
        require_converter(settings.VIEWER)
        services.remove_deleted_model_leftovers()
        recovered = services.recover_interrupted_conversions()
        if recovered:
            self.stdout.write(f"re-queued interrupted conversions: {', '.join(recovered)}")
        threading.Thread(target=watch_conversions, args=(options["recovery_interval"],), daemon=True).start()
        call_command("db_worker", queue_name=CONVERSION_QUEUE, interval=options["interval"], startup_delay=False)
