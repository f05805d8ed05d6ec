"""Use cases of the trash: a deleted model or project goes to the trash for `trashRetentionDays`, restorable from the
API and the admin, then purged (manage.py purge_trash, and hourly by the conversion workers). Every deletion leaves
a Deletion record (who, from where, when, what became of it) that outlives the purge, as the change log does.

A trashed record stays in its table, marked by deleted_at (the apps' default managers leave it out, so every route
answers 404 for it); a trashed model's folder moves to {dataDir}/trash/models/ (the edit service, which reads the
data directory itself, then finds nothing to edit either). A project's models go to the trash with it and come back
with it; its session, event log and plan files never move (they are hidden with the project)."""

from __future__ import annotations

import logging
import os
import re
import shutil
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts_app.audit import audit_record
from core.errors import Conflict, NotFound
from models_app.models import MODEL_ID_PATTERN, PROJECT_ID_PATTERN, Deletion, IfcModel, Project, ProjectModel
from models_app.project_services import project_delete
from models_app.selectors import model_get, project_get, project_model_ids
from models_app.services import model_delete, request_conversion
from models_app.signals import project_deleting
from models_app.storage import model_dir, trashed_model_dir
from api.principal import Principal

logger = logging.getLogger(__name__)

TRASH_ITEM_ID_RE = re.compile(rf"^(?:{MODEL_ID_PATTERN}|{PROJECT_ID_PATTERN})$")
SCHEDULED_PURGE = Principal("scheduled purge")


# --- selectors -------------------------------------------------------------------------------------------------


def trash_list():
    """What is in the trash, most recently deleted first (a project's models are part of its item)."""
    return Deletion.objects.filter(restored_at__isnull=True, purged_at__isnull=True).order_by("-deleted_at", "-id")


def _trash_item(item_id: str, *, lock: bool = False) -> Deletion:
    if not TRASH_ITEM_ID_RE.match(item_id or ""):
        raise NotFound(f"trash item {item_id!r} not found (ids are model ids m_ or project ids p_ + 16 lowercase hex digits)")
    items = trash_list().select_for_update() if lock else trash_list()
    deletion = items.filter(target_id=item_id).first()
    if deletion is not None:
        return deletion
    project_id = ProjectModel.with_trashed.filter(model_id=item_id, model__deleted_at__isnull=False).values_list("project_id", flat=True).first()
    if project_id and trash_list().filter(target_id=project_id).exists():
        raise Conflict(f"model {item_id} went to the trash with project {project_id}: restore or purge the project")
    raise NotFound(f"{item_id} is not in the trash")


def _project_id_of(deletion: Deletion) -> str:
    """The project a trashed item belongs to (a project: itself), for its audit events."""
    if deletion.kind == Deletion.Kind.PROJECT:
        return deletion.target_id
    return ProjectModel.with_trashed.filter(model_id=deletion.target_id).values_list("project_id", flat=True).first() or ""


# --- moving to the trash ---------------------------------------------------------------------------------------


def _move_folders(model_ids: list[str], *, to_trash: bool) -> list[str]:
    """Moves the models' folders into or out of the trash; returns the ids moved (a model may have no folder)."""
    moved = []
    for model_id in model_ids:
        source, target = (model_dir(model_id), trashed_model_dir(model_id)) if to_trash else (trashed_model_dir(model_id), model_dir(model_id))
        if not source.exists():
            continue
        if target.exists():
            raise Conflict(f"cannot move the files of model {model_id}: {target} is in the way")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)
        moved.append(model_id)
    return moved


def _with_folders_moved(model_ids: list[str], *, to_trash: bool, update) -> None:
    """update() (database writes) and the folder moves, both or neither."""
    moved: list[str] = []
    try:
        with transaction.atomic():
            update()
            moved = _move_folders(model_ids, to_trash=to_trash)
    except BaseException:
        _move_folders(moved, to_trash=not to_trash)
        raise


def _new_deletion(*, kind: str, target_id: str, title: str, model_ids: list[str], by: Principal, now) -> Deletion:
    return Deletion.objects.create(
        kind=kind, target_id=target_id, title=title, model_ids=model_ids, deleted_at=now, deleted_by=by.name,
        client_address=by.address, purge_at=now + timedelta(days=settings.VIEWER.trashRetentionDays),
    )


def model_trash(model_id: str, *, by: Principal) -> Deletion:
    """DELETE /models/{id}: the model goes to the trash (gone from every route; its queued conversion does not run)."""
    model = model_get(model_id)
    now = timezone.now()
    deletion: list[Deletion] = []

    def update():
        if not IfcModel.objects.filter(pk=model.id).update(deleted_at=now):
            raise NotFound(f"model {model.id} not found")  # trashed meanwhile
        deletion.append(_new_deletion(kind=Deletion.Kind.MODEL, target_id=model.id, title=model.name, model_ids=[model.id], by=by, now=now))

    _with_folders_moved([model.id], to_trash=True, update=update)
    logger.info("model %s moved to the trash by %s (%s)", model.id, by.name, by.address)
    audit_record(by, "model.delete", object=f"model:{model.id}", project_id=_project_id_of(deletion[0]), detail={"name": model.name})
    return deletion[0]


def project_trash(project_id: str, *, by: Principal) -> Deletion:
    """DELETE /chat/projects/{id}: the project goes to the trash with its models; its running chat turn is aborted
    first (project_deleting), its session, event log and plan files stay (hidden with the project)."""
    project = project_get(project_id)
    project_deleting.send(sender=None, project_id=project.id)
    model_ids = project_model_ids(project)
    now = timezone.now()
    deletion: list[Deletion] = []

    def update():
        if not Project.objects.filter(pk=project.id).update(deleted_at=now):
            raise NotFound(f"project {project.id} not found")
        IfcModel.objects.filter(pk__in=model_ids).update(deleted_at=now)
        deletion.append(_new_deletion(kind=Deletion.Kind.PROJECT, target_id=project.id, title=project.title, model_ids=model_ids, by=by, now=now))

    _with_folders_moved(model_ids, to_trash=True, update=update)
    logger.info("project %s moved to the trash with models %s by %s (%s)", project.id, model_ids, by.name, by.address)
    audit_record(by, "project.delete", object=f"project:{project.id}", project_id=project.id, detail={"title": project.title, "models": model_ids})
    return deletion[0]


# --- restoring -------------------------------------------------------------------------------------------------


def _resume_conversions(model_ids: list[str]) -> None:
    """A model trashed while converting had its queued job dropped (the worker found no model): queued again."""
    for model_id in model_ids:
        for leftover in model_dir(model_id).glob(".convert-*"):
            shutil.rmtree(leftover, ignore_errors=True)
    converting = list(IfcModel.objects.filter(pk__in=model_ids, status=IfcModel.Status.CONVERTING).values_list("id", flat=True))
    IfcModel.objects.filter(pk__in=converting).update(job=IfcModel.Job.IDLE, job_worker="")
    for model_id in converting:
        request_conversion(model_id)


def trash_restore(item_id: str, *, by: Principal) -> IfcModel | Project:
    """POST /trash/{id}/restore: the model or project comes back with the same id (a project with its models,
    session, event log and plans). A model whose project is in the trash is refused (40900): restore the project."""
    with transaction.atomic():
        deletion = _trash_item(item_id, lock=True)
        if deletion.kind == Deletion.Kind.MODEL:
            project_id = ProjectModel.with_trashed.filter(model_id=deletion.target_id).values_list("project_id", flat=True).first()
            if project_id and Project.with_trashed.filter(pk=project_id, deleted_at__isnull=False).exists():
                raise Conflict(f"model {deletion.target_id} belongs to project {project_id}, which is in the trash: restore the project first")
            restored_class = IfcModel
        else:
            restored_class = Project

        def update():
            restored_class.with_trashed.filter(pk=deletion.target_id).update(deleted_at=None)
            IfcModel.with_trashed.filter(pk__in=deletion.model_ids).update(deleted_at=None)
            Deletion.objects.filter(pk=deletion.pk).update(restored_at=timezone.now(), restored_by=by.name)

        _with_folders_moved(deletion.model_ids, to_trash=False, update=update)
    _resume_conversions(deletion.model_ids)
    logger.info("%s %s restored from the trash by %s (%s)", deletion.kind, deletion.target_id, by.name, by.address)
    audit_record(by, "trash.restore", object=f"{deletion.kind}:{deletion.target_id}", project_id=_project_id_of(deletion), detail={"title": deletion.title})
    return restored_class.objects.get(pk=deletion.target_id)


# --- purging ---------------------------------------------------------------------------------------------------


def _purge(deletion: Deletion, by: Principal) -> None:
    """Inside a transaction holding the deletion row: removes the model (or project with its models) for good."""
    audit_record(by, "trash.purge", object=f"{deletion.kind}:{deletion.target_id}", project_id=_project_id_of(deletion), detail={"title": deletion.title, "models": deletion.model_ids})
    if deletion.kind == Deletion.Kind.MODEL:
        if IfcModel.with_trashed.filter(pk=deletion.target_id).exists():
            model_delete(deletion.target_id)
    else:
        member_ids = list(ProjectModel.with_trashed.filter(project_id=deletion.target_id).values_list("model_id", flat=True))
        if Project.with_trashed.filter(pk=deletion.target_id).exists():
            project_delete(deletion.target_id)
        # models trashed on their own before the project: purged with it, so their own items leave the trash too
        trash_list().filter(kind=Deletion.Kind.MODEL, target_id__in=member_ids).update(purged_at=timezone.now(), purged_by=by.name)
    Deletion.objects.filter(pk=deletion.pk).update(purged_at=timezone.now(), purged_by=by.name)
    logger.info("%s %s purged from the trash by %s", deletion.kind, deletion.target_id, by.name)


def trash_purge(item_id: str, *, by: Principal) -> None:
    """DELETE /trash/{id}: purged at once (files gone; the change log and the deletion record stay)."""
    with transaction.atomic():
        _purge(_trash_item(item_id, lock=True), by)


def trash_purge_due(*, by: Principal = SCHEDULED_PURGE, everything: bool = False) -> list[Deletion]:
    """Purges what is past its purgeAt (or everything in the trash); returns the deletions purged. Each in its own
    transaction, so several workers purging at once each take an item once."""
    due = trash_list() if everything else trash_list().filter(purge_at__lte=timezone.now())
    purged = []
    for deletion_id in list(due.values_list("pk", flat=True)):
        with transaction.atomic():
            deletion = trash_list().select_for_update().filter(pk=deletion_id).first()
            if deletion is None:
                continue  # restored or purged meanwhile
            _purge(deletion, by)
            purged.append(deletion)
    return purged
