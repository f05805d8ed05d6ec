"""The job kind of the coordination app, registered with core.jobs by CoordinationAppConfig.ready(): a clash run,
on the clashes queue (`manage.py clash_worker`), one task per run."""

from django.utils import timezone

from coordination_app import services
from coordination_app.models import ClashRun
from core.jobs import JobKind, register
from core.jobs.tasks import CLASH_QUEUE


def register_job_kinds() -> None:
    register(JobKind(
        name=services.CLASH_RUN, queue=CLASH_QUEUE, model=ClashRun, run=services.run_claimed, key=("id",),
        max_attempts=services.MAX_ATTEMPTS,
        claimed_fields=lambda: {"started_at": timezone.now()}, done_fields=lambda: {"finished_at": timezone.now()},
        failed_fields={"status": ClashRun.Status.FAILED},
        died_message="the clash worker died {attempts} times while running this run",
        leftovers=services.run_leftovers,
    ))
