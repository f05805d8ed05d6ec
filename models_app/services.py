"""Use cases of the models app: upload, retry, delete, conversion queueing and the conversion run itself."""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import transaction

from accounts_app.audit import audit_record
from api.principal import Principal
from core import jobs
from core.errors import Conflict, Invalid, NotFound, TooLarge
from core.files import link_or_copy
from models_app.conversion.runner import PipelineResult, run_pipeline
from models_app.conversion.sandbox import ConversionLimits
from models_app.models import IfcModel
from models_app.selectors import model_get, project_of_model
from models_app.signals import model_ready
from models_app.storage import (
    IFC_FILE,
    KIND_FILE,
    MODEL_ID_RE,
    STATIC_OUTPUTS,
    file_signature,
    model_dir,
    model_file,
    publish_file,
    publish_text,
    trashed_model_dir,
)

logger = logging.getLogger(__name__)

STEP_SIGNATURE = b"ISO-10303-21;"
CONVERSION = "conversion"  # the job kind (models_app.jobs)


# --- upload ----------------------------------------------------------------------------------------------------


def _check_step_content(path: Path) -> None:
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if not head.strip():
        raise Invalid("the file is empty")
    if not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(STEP_SIGNATURE):
        raise Invalid("the file is not an IFC file: it does not start with the ISO-10303-21 STEP header")
    if b"FILE_SCHEMA" not in head.upper():
        raise Invalid("the file is not an IFC file: its STEP header names no FILE_SCHEMA")


def checked_ifc_upload(uploaded_file) -> tuple[str, Path]:
    """The checks of an uploaded IFC (already streamed to a temporary file): its base name and temporary path, or
    40001 (not .ifc, not STEP content) / 40002 (over maxUploadMB)."""
    name = os.path.basename(uploaded_file.name or "").strip()
    if not name.lower().endswith(".ifc"):
        raise Invalid(f"only .ifc files are accepted, got {name or 'a file without a name'!r}")
    limit = settings.VIEWER.max_upload_bytes
    if uploaded_file.size > limit:
        raise TooLarge(f"file exceeds the upload limit of {limit / (1024 * 1024):g} MB")
    temp_path = Path(uploaded_file.temporary_file_path())
    _check_step_content(temp_path)
    return name, temp_path


def model_upload(*, uploaded_file, by: Principal | None = None, link: Callable[[IfcModel], None] | None = None) -> IfcModel:
    """Stores an uploaded IFC (already streamed to a temporary file) and queues its conversion; `by`: who uploads it,
    for the audit trail; `link(model)`: run in the transaction that saves the model (putting it into a project), its
    files written into the model's folder: a failure anywhere leaves no record and no folder."""
    name, temp_path = checked_ifc_upload(uploaded_file)
    model = IfcModel(name=name, size=uploaded_file.size, uploaded_by_id=by.user_id if by else None)
    folder = model_dir(model.id)
    folder.mkdir()
    try:
        # hard link, not move: Django still owns (and deletes) the temporary upload file
        staged = folder / f".{IFC_FILE}.upload"
        os.link(temp_path, staged)
        publish_file(staged, folder / IFC_FILE)
        with transaction.atomic():
            model.save(force_insert=True)
            if link is not None:
                link(model)
            queue_conversion(model)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    if by is not None:
        audit_record(by, "model.upload", object=f"model:{model.id}", project_id=project_of_model(model.id) or "",
                     detail={"name": name, "size": uploaded_file.size})
    return model


def model_create_for_script(*, name: str, format: str = "ifc") -> IfcModel:
    """A model whose product a build script will produce: its record and folder, no product yet (an IFC model
    converts once the script's first version is saved; a drawing is ready then). A drawing's folder carries the
    kind marker the edit service dispatches on."""
    model = IfcModel(name=name, format=format)
    model_dir(model.id).mkdir()
    try:
        if format == IfcModel.Format.DXF:
            publish_text(model_dir(model.id) / KIND_FILE, "dxf")
        model.save(force_insert=True)
    except BaseException:
        shutil.rmtree(model_dir(model.id), ignore_errors=True)
        raise
    return model


# --- conversion queue ------------------------------------------------------------------------------------------


def queue_conversion(model: IfcModel) -> None:
    """Inside a transaction holding the model row: a new revision; enqueue unless a job will pick it up anyway."""
    model.revision += 1
    model.status = IfcModel.Status.CONVERTING
    model.error = ""
    if model.job == IfcModel.Job.IDLE:
        model.job, model.attempts = IfcModel.Job.QUEUED, 0
        model.progress_phase, model.progress_percent = "queued", 0
        jobs.enqueue(CONVERSION, model.id)  # same database, same transaction: both or neither
    # queued: merged into the waiting job; running: the run sees the newer revision and runs again
    model.save()


def request_conversion(model_id: str) -> IfcModel:
    """The model's product changed: an IFC model is converted again; a drawing needs no conversion (the edit
    service published its render.json with it) and is ready."""
    with transaction.atomic():
        model = IfcModel.objects.select_for_update().filter(pk=model_id).first()
        if model is None:
            raise NotFound(f"model {model_id} not found")
        if model.format == IfcModel.Format.DXF:
            model.status, model.error = IfcModel.Status.READY, ""
            model.save(update_fields=["status", "error", "updated_at"])
        else:
            queue_conversion(model)
    return model


def model_retry(model_id: str) -> IfcModel:
    """Failed models are re-enqueued; a model already converting is returned as it is (its run goes on)."""
    model = model_get(model_id)
    if model.status == IfcModel.Status.CONVERTING:
        return model
    if model.status == IfcModel.Status.READY:
        raise Conflict(f"model {model.id} is ready: only a failed conversion can be retried")
    return request_conversion(model_id)


def model_delete(model_id: str) -> None:
    """Removes the model for good, in or outside the trash: its record with issues, overrides and version geometries
    (the change log stays, keeping the model id) and its folder. Deleting through the API moves a model to the
    trash (trash_services); this is its purge, and the undoing of a model whose creation failed."""
    if not MODEL_ID_RE.match(model_id or ""):
        raise NotFound(f"invalid model id {model_id!r}: expected m_ followed by 16 lowercase hex digits")
    model = IfcModel.with_trashed.filter(pk=model_id).first()
    if model is None:
        raise NotFound(f"model {model_id} not found")
    folder = trashed_model_dir(model.id) if model.deleted_at else model_dir(model.id)
    removing = Path(settings.MODELS_DIR) / f".deleted-{model.id}-{uuid.uuid4().hex[:8]}"
    if folder.exists():
        os.replace(folder, removing)
    try:
        model.delete()
    except BaseException:
        if removing.exists():
            os.replace(removing, folder)
        raise
    shutil.rmtree(removing, ignore_errors=True)


# --- conversion run (inside a worker) --------------------------------------------------------------------------


def publish_outputs(work_dir: Path, folder: Path) -> None:
    for name in STATIC_OUTPUTS:
        if (work_dir / name).exists():
            publish_file(work_dir / name, folder / name)
        else:
            (folder / name).unlink(missing_ok=True)  # an output this run did not make must not describe an older IFC


def _protected_paths(config) -> list[Path]:
    """What a conversion must never see, checked against the folders bound into its sandbox."""
    return [Path(config.dataDir).resolve(), *([Path(config.source).resolve()] if config.source != "defaults" else [])]


def convert_ifc(source: Path, work_dir: Path, on_progress) -> PipelineResult:
    """One confined conversion of the IFC `source` into work_dir (model.xkt, metadata.json, element-values.json)
    with the configured converter, time limit and sandbox limits."""
    config = settings.VIEWER
    return run_pipeline(
        source,
        work_dir,
        node_bin=config.nodeBin,
        converter_script=config.converterScript,
        timeout_seconds=config.conversionTimeoutSeconds,
        on_progress=on_progress,
        limits=ConversionLimits.from_config(config),
        protected=_protected_paths(config),
    )


def run_conversion(model_id: str) -> None:
    """The conversion task (core.jobs takes the job and calls convert_claimed)."""
    jobs.take(CONVERSION, model_id)


def convert_claimed(model: IfcModel) -> str | None:
    """The conversion job's run: converts the model's current IFC; AGAIN when a newer revision arrived meanwhile."""
    revision = model.revision
    folder = model_dir(model.id)
    work_dir = folder / f".convert-{uuid.uuid4().hex[:8]}"
    source = work_dir / IFC_FILE
    try:
        try:
            work_dir.mkdir()  # never parents: a deleted model's folder must not come back
            link_or_copy(folder / IFC_FILE, source)  # the run converts this exact file even if model.ifc is replaced
            result = convert_ifc(source, work_dir, jobs.progress_writer(CONVERSION, model))
        except OSError as exc:  # the model folder vanished (deleted) or the disk failed
            result = None
            error = f"conversion could not run: {exc}"
        else:
            error = result.error
        with transaction.atomic():
            current = IfcModel.objects.select_for_update().filter(pk=model.id).first()
            if current is None:
                return None
            if current.revision != revision:  # the IFC changed during the run: convert again
                current.progress_phase, current.progress_percent = "restarting", 0
                current.save(update_fields=["progress_phase", "progress_percent", "updated_at"])
                return jobs.AGAIN
            if result is not None and result.ok:
                publish_outputs(work_dir, folder)
                # size: a script run may have replaced the IFC
                outcome = {"status": IfcModel.Status.READY, "error": "", "size": source.stat().st_size, "converted_ifc": file_signature(source)}
            else:
                outcome = {"status": IfcModel.Status.FAILED, "error": error or "conversion failed"}
            shutil.rmtree(work_dir, ignore_errors=True)  # gone before the end is committed: no client sees it after
            jobs.finish(CONVERSION, model, progress_phase="", progress_percent=0, **outcome)
        if outcome["status"] == IfcModel.Status.READY:  # committed: apps that redo work per version hear it (clash tests)
            model_ready.send_robust(sender=IfcModel, model_id=model.id)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    logger.info("conversion of %s finished: %s", model.id, outcome["status"])
    return None


def reconvert_changed_products() -> list[str]:
    """Queues a conversion for every ready model whose model.ifc is no longer the file its outputs came from: the
    edit service changed it without going through the gateway (a direct edit-call, run or rollback)."""
    changed = []
    for model_id, converted in IfcModel.objects.filter(status=IfcModel.Status.READY).exclude(converted_ifc="").values_list("id", "converted_ifc"):
        try:
            current = file_signature(model_file(model_id, IFC_FILE))
        except FileNotFoundError:
            continue
        if current != converted:
            try:
                request_conversion(model_id)
            except NotFound:
                continue
            changed.append(model_id)
    for model_id in changed:
        logger.info("model.ifc of %s changed outside the gateway: reconversion queued", model_id)
    return changed


def recover_interrupted_conversions() -> list[str]:
    """Re-queues conversions whose worker died (at most their attempts, then failed) or whose task was lost. Returns
    the model ids re-queued."""
    return jobs.recover(CONVERSION)


def remove_deleted_model_leftovers() -> None:
    """Folders of models whose deletion was interrupted by a crash."""
    for leftover in Path(settings.MODELS_DIR).glob(".deleted-*"):
        shutil.rmtree(leftover, ignore_errors=True)


def retry_conversions(*, model_ids: list[str] | None = None, include_all: bool = False) -> list[IfcModel]:
    """manage.py retry_conversions / admin action: failed models by default, all, or the given ids."""
    if model_ids:
        models = [model_get(model_id) for model_id in model_ids]
    elif include_all:
        models = list(IfcModel.objects.all())
    else:
        models = list(IfcModel.objects.filter(status=IfcModel.Status.FAILED))
    return [request_conversion(model.id) for model in models]
