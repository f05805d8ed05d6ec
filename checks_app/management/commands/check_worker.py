from django.conf import settings

from checks_app import services
from checks_app.tasks import CHECK_QUEUE
from models_app.conversion.sandbox import ConversionLimits
from models_app.queue_worker import QueueWorkerCommand


class Command(QueueWorkerCommand):
    help = "Runs one IDS check worker (queue 'checks', one check at a time, taken in fair turns across requesters); resumes checks interrupted by a crash."
    queue_name = CHECK_QUEUE
    what = "IDS checks"

    def prepare(self) -> None:
        self.stdout.write(ConversionLimits.from_config(settings.VIEWER).cgroup_policy.startup_line("IDS checks"))

    def recover(self) -> list[str]:
        return services.recover_interrupted_checks()
