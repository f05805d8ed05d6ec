"""Use cases of a saved version's geometry: its XKT and metadata.json, converted on request so that a version diff
can draw the elements removed since that version. The IFC comes from the edit service (which rebuilds an older
version from its script in its sandbox), or is an uploaded model's stored revision; the conversion is the current
model's confined pipeline, run by the same conversion workers on the same queue. Versions never change: a ready
version is never converted again.

States: queued -> converting -> ready | failed. A request while queued or converting answers that state; a failed
one is queued again by the next request; a worker that dies mid-run leaves it to recovery (core.jobs: re-queued, at
most MAX_ATTEMPTS runs)."""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from pathlib import Path

from django.db import transaction

from core import jobs
from core.errors import ApplicationError, Invalid, NotFound
from models_app import revision_services
from models_app.models import IfcModel, VersionGeometry
from models_app.services import convert_ifc, model_get, publish_outputs
from models_app.storage import (
    IFC_FILE,
    METADATA_FILE,
    VERSION_RE,
    XKT_FILE,
    fsync_dir,
    version_geometry_dir,
    version_geometry_root,
)

logger = logging.getLogger(__name__)

VERSION_GEOMETRY = "version_geometry"  # the job kind (models_app.jobs)
MAX_ATTEMPTS = 3
ERROR_TAIL_CHARS = 2048
ACTIVE = (VersionGeometry.Status.QUEUED, VersionGeometry.Status.CONVERTING)


def _version_checked(version: str) -> str:
    if not VERSION_RE.match(version or ""):
        raise Invalid(f"invalid version {version!r}: a saved version v<n> (v1, v2, ...)")
    return version


def _files_present(model_id: str, version: str) -> bool:
    folder = version_geometry_dir(model_id, version)
    return (folder / XKT_FILE).is_file() and (folder / METADATA_FILE).is_file()


def _source(model_id: str) -> str:
    return VersionGeometry.Source.REVISION if revision_services.uses_revisions(model_id) else VersionGeometry.Source.SCRIPT


def _usable(geometry: VersionGeometry | None, model_id: str, version: str, source: str) -> bool:
    """Queued, converting, or ready with its files, for the versions the model has now (a script that took over an
    uploaded model numbers its own v1, v2, ...)."""
    if geometry is None or geometry.source != source:
        return False
    return geometry.status in ACTIVE or (geometry.status == VersionGeometry.Status.READY and _files_present(model_id, version))


# --- selectors -------------------------------------------------------------------------------------------------


def version_geometry_get(model_id: str, version: str) -> VersionGeometry:
    """The state of a version's geometry; 40400 until it was requested."""
    model = model_get(model_id)
    _version_checked(version)
    geometry = VersionGeometry.objects.filter(model=model, version=version).first()
    if geometry is None:
        raise NotFound(f"the geometry of {version} of model {model.id} was not requested (POST it first)")
    return geometry


def version_geometry_file(model_id: str, version: str, name: str) -> Path:
    """A published output (model.xkt, metadata.json) of a version; 40400 before it is ready. Ids and version are
    checked by pattern before any path is made."""
    model = model_get(model_id)
    if not VERSION_RE.match(version or ""):
        raise NotFound(f"invalid version {version!r}: a saved version v<n>")
    path = version_geometry_dir(model.id, version) / name
    geometry = VersionGeometry.objects.filter(model=model, version=version).first()
    if not path.is_file() or geometry is None or geometry.source != _source(model.id):
        raise NotFound(f"{name} of {version} of model {model.id} is not available (request its geometry and wait until it is ready)")
    return path


# --- requesting ------------------------------------------------------------------------------------------------


def version_geometry_request(model_id: str, version: str) -> VersionGeometry:
    """Queues the conversion of a saved version's geometry once; answers its state. 40001 for a drawing or a
    version that is not v<n>, 40400 for a version the model has not saved."""
    model = model_get(model_id)
    if model.format == IfcModel.Format.DXF:
        raise Invalid(f"model {model.id} is a DXF drawing: drawings have no 3D geometry per version")
    _version_checked(version)
    source = _source(model.id)
    existing = VersionGeometry.objects.filter(model=model, version=version).first()
    if _usable(existing, model.id, version, source):
        return existing
    if existing is None or existing.source != source:
        saved = revision_services.saved_versions(model.id)
        if version not in saved:
            raise NotFound(f"model {model.id} has no version {version} (saved versions: {', '.join(saved) or 'none'})")
    with transaction.atomic():
        if IfcModel.objects.select_for_update().filter(pk=model.id).first() is None:  # one request at a time per model
            raise NotFound(f"model {model.id} not found")
        geometry, created = VersionGeometry.objects.select_for_update().get_or_create(model=model, version=version)
        if not created and _usable(geometry, model.id, version, source):
            return geometry  # another request queued it meanwhile
        if geometry.source != source:  # the other numbering's files: never kept as this version's
            shutil.rmtree(version_geometry_dir(model.id, version), ignore_errors=True)
            geometry.source = source
        geometry.status, geometry.error, geometry.attempts, geometry.worker = VersionGeometry.Status.QUEUED, "", 0, ""
        geometry.progress_phase, geometry.progress_percent = "queued", 0
        geometry.save()
        jobs.enqueue(VERSION_GEOMETRY, model.id, version)  # same database, same transaction: both or neither
    return geometry


# --- the conversion (inside a conversion worker) ----------------------------------------------------------------


def _publish_version(model_id: str, version: str, work_dir: Path) -> None:
    """The outputs appear together: moved into a staging folder, which is renamed to versions/<version>. A folder
    already there came from an earlier run of the same (immutable) version and is kept."""
    root = version_geometry_root(model_id)
    staging = root / f".publish-{version}-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        publish_outputs(work_dir, staging)
        try:
            os.rename(staging, version_geometry_dir(model_id, version))
        except OSError:
            if not _files_present(model_id, version):
                raise
        fsync_dir(root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def run_version_conversion(model_id: str, version: str) -> None:
    """The task (core.jobs takes the job and calls convert_claimed_version)."""
    jobs.take(VERSION_GEOMETRY, model_id, version)


def convert_claimed_version(geometry: VersionGeometry) -> None:
    """The version geometry job's run: fetches the version's IFC from the edit service, converts it confined,
    publishes the outputs."""
    model_id, version = geometry.model_id, geometry.version
    on_progress = jobs.progress_writer(VERSION_GEOMETRY, geometry)
    root = version_geometry_root(model_id)
    work_dir = root / f".convert-{version}-{uuid.uuid4().hex[:8]}"
    try:
        root.mkdir(exist_ok=True)  # never parents: a deleted model's folder must not come back
        work_dir.mkdir()
        on_progress("fetching", 2)
        revision_services.version_ifc_fetch(model_id, version, work_dir / IFC_FILE)
        result = convert_ifc(work_dir / IFC_FILE, work_dir, on_progress)
        if result.ok:
            _publish_version(model_id, version, work_dir)
            jobs.finish(VERSION_GEOMETRY, geometry, status=VersionGeometry.Status.READY, error="", progress_phase="done", progress_percent=100)
        else:
            jobs.finish(VERSION_GEOMETRY, geometry, status=VersionGeometry.Status.FAILED, error=(result.error or "conversion failed")[-ERROR_TAIL_CHARS:], progress_phase="", progress_percent=0)
    except (ApplicationError, OSError) as exc:  # the edit service could not give the IFC; the model folder vanished (deleted)
        message = str(exc.detail) if isinstance(exc, ApplicationError) else f"conversion could not run: {exc}"
        jobs.finish(VERSION_GEOMETRY, geometry, status=VersionGeometry.Status.FAILED, error=message[-ERROR_TAIL_CHARS:], progress_phase="", progress_percent=0)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    logger.info("conversion of %s of %s finished", version, model_id)


# --- recovery (conversion workers, at start and periodically) --------------------------------------------------


def leftovers(geometry: VersionGeometry) -> list[Path]:
    """The work and staging folders a conversion of the version left when its worker died."""
    root = version_geometry_root(geometry.model_id)
    return [path for pattern in (f".convert-{geometry.version}-*", f".publish-{geometry.version}-*") for path in root.glob(pattern)]


def recover_interrupted_version_conversions() -> list[str]:
    """Conversions whose worker died are queued again (at most MAX_ATTEMPTS runs, then failed); queued ones whose
    task was lost are enqueued again. Returns "<model id>/<version>" of each re-queued conversion."""
    return jobs.recover(VERSION_GEOMETRY)
