from django_tasks import task

from checks_app import services

CHECK_QUEUE = "checks"


@task(queue_name=CHECK_QUEUE)
def run_check_task(check_id: str) -> None:
    """A turn of the check queue, enqueued with (and named after) check_id: runs whichever queued check is fairest
    next (services.check_take_turn)."""
    services.check_take_turn()
