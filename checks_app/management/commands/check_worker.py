from django.conf import settings

from core.jobs.tasks import CHECK_QUEUE
from core.jobs.worker import QueueWorkerCommand
from models_app.public import ConversionLimits


class Command(QueueWorkerCommand):
    help = "Runs one IDS check worker (queue 'checks', one check at a time, taken in fair turns across requesters); resumes checks interrupted by a crash."
    queue_name = CHECK_QUEUE
    what = "IDS checks"

    def prepare(self) -> None:
        self.stdout.write(ConversionLimits.from_config(settings.VIEWER).cgroup_policy.startup_line("IDS checks"))
