from core.jobs.tasks import CLASH_QUEUE
from core.jobs.worker import QueueWorkerCommand


class Command(QueueWorkerCommand):
    help = "Runs one clash worker (queue 'clashes', one clash run at a time); resumes runs interrupted by a crash."
    queue_name = CLASH_QUEUE
    what = "clash runs"
