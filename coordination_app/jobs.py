"""The job kind of the coordination app, registered with core.jobs by CoordinationAppConfig.ready(): a clash run,
on the clashes queue (`manage.py clash_worker`), one task per run. Its use cases are named, not imported: they load
the clash engine (numpy, ifcopenshell), which only the clash worker and the gateway need."""

from django.utils import timezone

from coordination_app.models import ClashRun
from core.jobs import JobKind, on_first_call, register
from core.jobs.tasks import CLASH_QUEUE

CLASH_RUN = "clash_run"  # the job kind's name
MAX_ATTEMPTS = 2


def register_job_kinds() -> None:
    register(JobKind(
        name=CLASH_RUN, queue=CLASH_QUEUE, model=ClashRun, run=on_first_call("coordination_app.services.run_claimed"), key=("id",),
        max_attempts=MAX_ATTEMPTS,
        claimed_fields=lambda: {"started_at": timezone.now()}, done_fields=lambda: {"finished_at": timezone.now()},
        failed_fields={"status": ClashRun.Status.FAILED},
        died_message="the clash worker died {attempts} times while running this run",
        leftovers=on_first_call("coordination_app.services.run_leftovers"),
    ))
