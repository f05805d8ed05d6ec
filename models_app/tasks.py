from django_tasks import task

from models_app import services, version_geometry

CONVERSION_QUEUE = "conversions"


@task(queue_name=CONVERSION_QUEUE)
def convert_model_task(model_id: str) -> None:
    services.run_conversion(model_id)


@task(queue_name=CONVERSION_QUEUE)
def convert_version_task(model_id: str, version: str) -> None:
    version_geometry.run_version_conversion(model_id, version)
