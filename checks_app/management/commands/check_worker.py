import logging

from django.conf import settings

from checks_app.engine.runner import ZygoteGone, check_limits, warm_up
from checks_app.services.checks import check_memory_limit_mb
from core.jobs.tasks import CHECK_QUEUE
from core.jobs.worker import QueueWorkerCommand
from models_app.public import ConversionLimits

logger = logging.getLogger(__name__)


class Command(QueueWorkerCommand):
    help = "Runs one IDS check worker (queue 'checks', one check at a time, taken in fair turns across requesters); resumes checks interrupted by a crash."
    queue_name = CHECK_QUEUE
    what = "IDS checks"

    def prepare(self) -> None:
        self.stdout.write(ConversionLimits.from_config(settings.VIEWER).cgroup_policy.startup_line("IDS checks"))
        try:
            warm_up(check_limits(settings.VIEWER, check_memory_limit_mb()))  # the check zygote, before the first check
        except ZygoteGone as exc:
            logger.error("%s (each check tries again)", exc)
