"""The job kind of the checks app, registered with core.jobs by ChecksAppConfig.ready(): an IDS check, run on the
check queue in fair turns (a task runs whichever queued check the fair order puts first). Its use cases are named,
not imported: they load ifctester and the BCF library, which only the check worker and the gateway need."""

from django.utils import timezone

from checks_app.models import Check
from core.jobs import JobKind, on_first_call, register
from core.jobs.tasks import CHECK_QUEUE

CHECK = "check"  # the job kind's name
MAX_ATTEMPTS = 3


def register_job_kinds() -> None:
    register(JobKind(
        name=CHECK, queue=CHECK_QUEUE, model=Check, run=on_first_call("checks_app.services.check_claimed_run"), key=("id",),
        turns=True, claimable=on_first_call("checks_app.services.fair_order"), max_attempts=MAX_ATTEMPTS,
        claimed_fields=lambda: {"started_at": timezone.now()}, done_fields=lambda: {"finished_at": timezone.now()},
        failed_fields={"status": Check.Status.FAILED},
        died_message="the check worker died {attempts} times while running this check",
        leftovers=on_first_call("checks_app.services.check_leftovers"),
    ))
