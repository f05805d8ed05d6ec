from django_tasks import task

from models_app import services

CONVERSION_QUEUE = "conversions"


@task(queue_name=CONVERSION_QUEUE)
def convert_model_task(model_id: str) -> None:
    services.run_conversion(model_id)
