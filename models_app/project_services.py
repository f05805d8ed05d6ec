"""Use cases of projects (a project is a group of models): create one (an ifc project gets its skeleton model at
once unless asked not to), create a project's model from a build script, create the model of a cad or cad->ifc
project, upload a model into a project, put an existing model into a project (with its discipline) or take it out,
delete a project with everything it owns, and the project lock a delivery holds while it builds.

A model of a project carries the marker file `model.project` (the project id) in its folder, written before its
first build: the edit service lets a build script read a drawing ("source" in PARAMS) only when both carry the same
marker, so a script can never read another project's drawing."""

from __future__ import annotations

import json
import logging
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from filelock import ReadWriteLock, Timeout

from accounts_app.audit import audit_record
from accounts_app.policy import require, visible_project_ids
from accounts_app.roles import Capability
from api.principal import Principal
from core import cancellation
from core.errors import ApplicationError, Conflict, Invalid, NotFound, Upstream
from core.provenance import DEFAULT_AUTHOR, Provenance
from models_app import edit_client
from models_app.access_scopes import project_scope
from models_app.models import IfcModel, Project, ProjectModel
from models_app.selectors import (
    PROJECT_ID_RE,
    model_get,
    project_get,
    project_model_ids,
    project_model_of_format,
    project_of_model,
)
from models_app.services import model_create_for_script, model_delete, model_upload, request_conversion
from models_app.signals import project_deleting
from models_app.storage import latest_saved_product, model_dir, publish_text

logger = logging.getLogger(__name__)

DEFAULT_PROJECT_TITLE = "AI 项目"
PROJECT_FILE = "model.project"  # read by the edit service (edit_service/engine/workflow.py, script_inputs)
SKELETONS = Path(__file__).resolve().parent / "skeletons"
IFC_SKELETON = SKELETONS / "ifc_project.py"
DRAWING_SKELETON = SKELETONS / "cad_drawing.py"
IFC_FROM_DRAWING_SKELETON = SKELETONS / "ifc_from_drawing.py"


# --- skeleton build scripts --------------------------------------------------------------------------------------


def skeleton(path: Path, replacements: dict[str, str]) -> str:
    """A skeleton build script with some PARAMS literals replaced (the skeletons are ours, so their text is known)."""
    script = path.read_text(encoding="utf-8")
    for old, new in replacements.items():
        if old not in script:
            raise RuntimeError(f"skeleton {path.name} has no {old!r}")
        script = script.replace(old, new, 1)
    return script


def _named(path: Path, placeholder: str, name: str, more: dict[str, str] | None = None, params: dict | None = None) -> str:
    """A skeleton with its name, and PARAMS the skeleton declares as None given values (Python literals: the values
    are JSON data, whose repr is a literal)."""
    filled = {f'"{key}": None': f'"{key}": {value!r}' for key, value in (params or {}).items()}
    return skeleton(path, {f'"name": "{placeholder}"': f'"name": {json.dumps(name, ensure_ascii=False)}', **(more or {}), **filled})


def ifc_skeleton_script(title: str, params: dict | None = None) -> str:
    return _named(IFC_SKELETON, "New project", title, params=params)


# --- models of a project -----------------------------------------------------------------------------------------


def _write_marker(project_id: str, model_id: str) -> None:
    publish_text(model_dir(model_id) / PROJECT_FILE, project_id)


def project_add_model(project: Project, model: IfcModel, discipline: str = "") -> None:
    ProjectModel.objects.create(project=project, model=model, discipline=discipline)
    _write_marker(project.id, model.id)


def project_model_upload(*, uploaded_file, project_id: str = "", discipline: str = "", by: Principal | None = None) -> IfcModel:
    """POST /models: an uploaded IFC stored and queued for conversion; with a project id, linked to that project
    (with its discipline, marker written) in the same step, all or nothing. The caller needs edit on the project; an
    unknown project is 40001 naming projectId (a body field) for a caller who may see every project; for any other
    caller an unknown project is 40400, as one it may not see, so that the answer tells no project's existence."""
    if not project_id:
        if discipline:
            raise Invalid("discipline: a discipline is given with projectId (it is the model's discipline in that project)")
        return model_upload(uploaded_file=uploaded_file, by=by)
    scope = project_scope(project_id)
    if by is not None and (scope.exists or visible_project_ids(by) is not None):
        require(by, Capability.EDIT, scope)  # unknown or hidden: the same 40400, unless the caller sees every project
    project = Project.objects.filter(pk=project_id).first() if scope.exists else None  # not one in the trash
    if project is None:
        raise Invalid(f"projectId: project {project_id!r} not found")
    return model_upload(uploaded_file=uploaded_file, by=by, link=lambda model: project_add_model(project, model, discipline))


def project_model_put(*, project_id: str, model_id: str, discipline: str | None = None, by: Principal | None = None) -> Project:
    """PUT /projects/{pid}/models/{id}: puts an existing model into the project, or changes the discipline of one
    already in it (discipline None keeps it; a model added without one gets ""). The route asks the model's owner;
    the caller also needs edit on the project. A model of another project is 40900 (take it out there first)."""
    project = project_get(project_id)
    if by is not None:
        require(by, Capability.EDIT, project_scope(project.id))
    model = model_get(model_id)
    with project_lock(project.id, exclusive=False), transaction.atomic():
        link = ProjectModel.objects.select_for_update().filter(model_id=model.id).first()
        if link is not None and link.project_id != project.id:
            raise Conflict(f"model {model.id} belongs to project {link.project_id}: take it out there first "
                           f"(DELETE /api/v1/projects/{link.project_id}/models/{model.id})")
        if link is None:
            try:
                with transaction.atomic():
                    project_add_model(project, model, discipline or "")
            except IntegrityError:  # another request put it into a project meanwhile
                raise Conflict(f"model {model.id} was just put into another project") from None
        elif discipline is not None and discipline != link.discipline:
            link.discipline = discipline
            link.save(update_fields=["discipline"])
        else:
            return project
    if by is not None:
        audit_record(by, "project.model-put", object=f"model:{model.id}", project_id=project.id,
                     detail={"added": link is None, "discipline": discipline})
    return project


def project_model_remove(*, project_id: str, model_id: str, by: Principal | None = None) -> Project:
    """DELETE /projects/{pid}/models/{id}: takes the model out of the project (the route asks edit on it there). The
    model stays, with its issues and files, back with its uploader; a model that has none (built by the project's
    agent) goes to whoever took it out, so that someone still owns it. Its marker is removed: its build script no
    longer reads the project's drawings."""
    project = project_get(project_id)
    model = model_get(model_id)
    with project_lock(project.id, exclusive=False), transaction.atomic():
        removed, _ = ProjectModel.objects.filter(project=project, model=model).delete()
        if not removed:
            raise NotFound(f"model {model.id} is not in project {project.id}")
        if model.uploaded_by_id is None and by is not None and by.user_id is not None:
            IfcModel.objects.filter(pk=model.id).update(uploaded_by_id=by.user_id)
        (model_dir(model.id) / PROJECT_FILE).unlink(missing_ok=True)
    if by is not None:
        audit_record(by, "project.model-remove", object=f"model:{model.id}", project_id=project.id)
    return project


def project_markers_write() -> int:
    """Writes the project marker of every project model that lacks it (models added before markers existed); run
    at gateway start. Returns how many were written."""
    written = 0
    for project_id, model_id in ProjectModel.objects.values_list("project_id", "model_id"):
        marker = model_dir(model_id) / PROJECT_FILE
        if marker.parent.is_dir() and not marker.exists():
            _write_marker(project_id, model_id)
            written += 1
    return written


def project_model_create(*, project: Project, name: str, script: str, note: str, author: str = DEFAULT_AUTHOR,
                         provenance: str = Provenance.UI.value, format: str = IfcModel.Format.IFC) -> tuple[IfcModel, dict]:
    """A new model of the project built by a script: linked to the project (marker written) before its first build,
    then staged, run in the sandbox and saved as v1 by the edit service, then converted. Any failure, or the caller
    giving up before the model is kept (cancellation), leaves nothing behind; edit-service failures are 50200."""
    model = model_create_for_script(name=name, format=format)
    try:
        project_add_model(project, model)
        edit_client.call("PUT", f"/models/{model.id}/script", json={"script": script, "note": note})
        cancellation.check()
        saved = edit_client.call("POST", f"/models/{model.id}/script/save", json={"note": note, "author": author, "provenance": {"source": provenance}})
        with cancellation.commit(f"created {model.format} model {model.id} ({saved.get('version')})"):
            request_conversion(model.id)
    except ApplicationError as exc:
        model_delete(model.id)
        raise Upstream(f"the edit service could not build the model: {exc.detail}", data=exc.data) from None
    except BaseException:
        model_delete(model.id)
        raise
    return model, saved


def project_create(*, title: str, kind: str, skeleton: bool = True) -> Project:
    """A new project. Kind ifc gets its skeleton model at once (build script staged, run in the sandbox, saved as
    v1, converted) unless `skeleton` is False (a project for uploaded models); cad and cad->ifc start blank
    (project_model_init creates their models)."""
    project = Project.objects.create(title=title or DEFAULT_PROJECT_TITLE, kind=kind)
    if kind == Project.Kind.IFC and skeleton:
        try:
            project_model_create(project=project, name=f"{project.title}.ifc", script=ifc_skeleton_script(project.title), note="project skeleton")
        except BaseException:
            project.delete()
            raise
    return project


def project_model_init(*, project: Project, title: str = "", script: str | None = None, params: dict | None = None,
                       author: str = DEFAULT_AUTHOR, provenance: str = Provenance.UI.value) -> tuple[IfcModel, dict]:
    """The next model of a cad or cad->ifc project, from `script` or a skeleton (with `params` filled in): a cad
    project gets its drawing; a cad->ifc project first its drawing, then its IFC model, whose script reads the
    drawing's latest saved version (pinned in PARAMS "source")."""
    if project.kind == Project.Kind.IFC:
        raise Invalid("init_model is for cad and cad->ifc projects (an ifc project gets its model when it is created)")
    drawing = project_model_of_format(project, IfcModel.Format.DXF)
    name = title or project.title
    if drawing is None:
        model_format, suffix = IfcModel.Format.DXF, ".dxf"
        script = script or _named(DRAWING_SKELETON, "New drawing", name, params=params)
    elif project.kind == Project.Kind.CAD_TO_IFC and project_model_of_format(project, IfcModel.Format.IFC) is None:
        model_format, suffix = IfcModel.Format.IFC, ".ifc"
        saved = latest_saved_product(drawing.id, ".dxf")
        if saved is None:
            raise Invalid(f"the drawing {drawing.id} has no saved version to build the IFC model from")
        source = {"model": drawing.id, "version": saved.stem}
        script = script or _named(IFC_FROM_DRAWING_SKELETON, "New building", name,
                                  {'"source": {"model": "m_0000000000000000", "version": "v1"}': f'"source": {json.dumps(source)}'}, params)
    else:
        raise Invalid(f"the project already has its model(s): {', '.join(project_model_ids(project))}")
    return project_model_create(project=project, name=f"{name}{suffix}", script=script, note="init_model", author=author,
                                provenance=provenance, format=model_format)


def project_delete(project_id: str) -> None:
    """Removes the project for good, in or outside the trash, with everything it owns: what other apps keep for it
    (its chat session, plan files; they are told first, project_deleting) and every model of the project, trashed
    ones too, with its issues, overrides and files (the change log stays). Deleting through the API moves a project
    to the trash (trash_services); this is its purge."""
    project = Project.with_trashed.filter(pk=project_id).first() if PROJECT_ID_RE.match(project_id or "") else None
    if project is None:
        raise NotFound(f"project {project_id!r} not found")
    project_deleting.send(sender=None, project_id=project.id)
    for model_id in ProjectModel.with_trashed.filter(project=project).values_list("model_id", flat=True):
        try:
            model_delete(model_id)
        except NotFound:
            continue
    project.delete()
    _lock_file(project.id).unlink(missing_ok=True)


# --- the project lock --------------------------------------------------------------------------------------------

LOCK_WAIT_SECONDS = 600  # a delivery builds up to two versions (a sandbox run, validation and snapshot each)
_held: ContextVar[frozenset[str]] = ContextVar("held_project_locks", default=frozenset())


def _lock_file(project_id: str) -> Path:
    return Path(settings.DATA_DIR) / "projects" / f"{project_id}.lock.db"


@contextmanager
def project_lock(project_id: str, *, exclusive: bool, wait_seconds: float = LOCK_WAIT_SECONDS):
    """A read-write lock per project, across processes: a delivery holds it exclusively while it builds the
    project's models, so no edit of those models is staged meanwhile; edits of a project's model (script routes)
    hold it shared, so they run side by side but never during a delivery. Re-entrant within one call chain."""
    if project_id in _held.get():
        yield
        return
    path = _lock_file(project_id)
    path.parent.mkdir(exist_ok=True)
    lock = ReadWriteLock(path, timeout=wait_seconds, is_singleton=False)
    try:
        held = lock.write_lock() if exclusive else lock.read_lock()
        with held:
            token = _held.set(_held.get() | {project_id})
            try:
                yield
            finally:
                _held.reset(token)
    except Timeout:
        raise Conflict(f"project {project_id} is busy (a delivery is building its models); try again") from None
    finally:
        lock.close()


def project_lock_of_model(model_id: str):
    """The shared project lock around a change of a model's staging or product (nothing for a model outside any
    project)."""
    project_id = project_of_model(model_id)
    return project_lock(project_id, exclusive=False) if project_id else nullcontext()

