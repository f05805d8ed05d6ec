from django_tasks import task

from checks_app import services

CHECK_QUEUE = "checks"


@task(queue_name=CHECK_QUEUE)
def run_check_task(check_id: str) -> None:
    services.check_run(check_id)
