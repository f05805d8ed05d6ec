"""The job kinds of the models app, registered with core.jobs by ModelsAppConfig.ready(): a model's conversion and a
saved version's geometry, both on the conversion queue."""

from core.jobs import JobKind, register
from core.jobs.tasks import CONVERSION_QUEUE
from models_app import services, version_geometry
from models_app.models import IfcModel, VersionGeometry
from models_app.storage import model_dir


def register_job_kinds() -> None:
    register(JobKind(
        name=services.CONVERSION, queue=CONVERSION_QUEUE, model=IfcModel, run=services.convert_claimed, key=("id",),
        state_field="job", queued=IfcModel.Job.QUEUED, running=IfcModel.Job.RUNNING, worker_field="job_worker",
        # a model converting with no job (its worker's record was lost) is queued again as well
        recoverable=lambda models: models.filter(status=IfcModel.Status.CONVERTING),
        failed_fields={"status": IfcModel.Status.FAILED}, done_fields=lambda: {"job": IfcModel.Job.IDLE},
        died_message="the conversion worker died {attempts} times while converting this model",
        leftovers=lambda model: model_dir(model.id).glob(".convert-*"),
    ))
    register(JobKind(
        name=version_geometry.VERSION_GEOMETRY, queue=CONVERSION_QUEUE, model=VersionGeometry,
        run=version_geometry.convert_claimed_version, key=("model_id", "version"),
        running=VersionGeometry.Status.CONVERTING, max_attempts=version_geometry.MAX_ATTEMPTS,
        failed_fields={"status": VersionGeometry.Status.FAILED},
        died_message="the conversion worker died {attempts} times while converting this version",
        leftovers=version_geometry.leftovers,
    ))
