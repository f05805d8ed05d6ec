"""The job kind of the checks app, registered with core.jobs by ChecksAppConfig.ready(): an IDS check, run on the
check queue in fair turns (a task runs whichever queued check the fair order puts first)."""

from django.utils import timezone

from checks_app import services
from checks_app.models import Check
from core.jobs import JobKind, register
from core.jobs.tasks import CHECK_QUEUE


def register_job_kinds() -> None:
    register(JobKind(
        name=services.CHECK, queue=CHECK_QUEUE, model=Check, run=services.check_claimed_run, key=("id",),
        turns=True, claimable=services.fair_order, max_attempts=services.MAX_ATTEMPTS,
        claimed_fields=lambda: {"started_at": timezone.now()}, done_fields=lambda: {"finished_at": timezone.now()},
        failed_fields={"status": Check.Status.FAILED},
        died_message="the check worker died {attempts} times while running this check",
        leftovers=services.check_leftovers,
    ))
