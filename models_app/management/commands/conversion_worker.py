import logging
import time

from django.conf import settings

from core.jobs.tasks import CONVERSION_QUEUE
from core.jobs.worker import QueueWorkerCommand
from models_app import services, trash_services
from models_app.conversion.sandbox import ConversionLimits, ConversionUnavailable, zygote_for
from sandboxing.cgroups import remove_stale

logger = logging.getLogger(__name__)

TRASH_PURGE_INTERVAL_SECONDS = 3600


class Command(QueueWorkerCommand):
    help = "Runs one conversion worker (IFC -> XKT + metadata.json); resumes conversions interrupted by a crash."
    queue_name = CONVERSION_QUEUE
    what = "conversions"

    def prepare(self) -> None:
        limits = ConversionLimits.from_config(settings.VIEWER)
        remove_stale(limits.cgroup_root)
        self.stdout.write(limits.cgroup_policy.startup_line("conversions"))
        try:
            zygote_for(limits).start()  # warm before the first conversion; in this (the main) thread, which lives on
        except ConversionUnavailable as exc:
            logger.error("%s (each conversion tries again)", exc)
        services.remove_deleted_model_leftovers()
        self.next_trash_purge = 0.0

    def periodic(self) -> None:
        """Also converts IFCs the edit service replaced without the gateway knowing, and purges the trash items past
        their purgeAt once an hour (the first time at the worker's first check)."""
        self.recover()
        services.reconvert_changed_products()
        if time.monotonic() >= self.next_trash_purge:
            self.next_trash_purge = time.monotonic() + TRASH_PURGE_INTERVAL_SECONDS
            for deletion in trash_services.trash_purge_due():
                logger.info("purged from the trash: %s %s (deleted %s by %s)", deletion.kind, deletion.target_id, deletion.deleted_at, deletion.deleted_by)
