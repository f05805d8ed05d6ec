from django.conf import settings

from core.jobs.tasks import CLASH_QUEUE
from core.jobs.worker import QueueWorkerCommand
from models_app.public import ConversionLimits


class Command(QueueWorkerCommand):
    help = "Runs one clash worker (queue 'clashes', one clash run at a time); resumes runs interrupted by a crash."
    queue_name = CLASH_QUEUE
    what = "clash runs"

    def prepare(self) -> None:
        self.stdout.write(ConversionLimits.from_config(settings.VIEWER).cgroup_policy.startup_line("clash runs"))
