"""One django-tasks task per queue (TASKS["default"]["QUEUES"] in the settings lists the same names): a task names
the job kind and the job's key, and runs it through lifecycle.take. A new queue adds a task here."""

from django_tasks import task

from core.jobs import lifecycle

CONVERSION_QUEUE = "conversions"
CHECK_QUEUE = "checks"


@task(queue_name=CONVERSION_QUEUE)
def conversions_job(kind_name: str, *key) -> None:
    lifecycle.take(kind_name, *key)


@task(queue_name=CHECK_QUEUE)
def checks_job(kind_name: str, *key) -> None:
    lifecycle.take(kind_name, *key)


QUEUE_TASKS = {CONVERSION_QUEUE: conversions_job, CHECK_QUEUE: checks_job}
