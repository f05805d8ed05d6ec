"""Use cases of an uploaded model's revisions (an extension of the spec, docs/api/revisions.md): a new revision of its
IFC, the list of its revisions as a versions response, and the semantic diff of two revisions, which the edit service
computes from the stored files with the engine that diffs script versions.

The model keeps its id and everything hanging off it (issues, overrides, change log, project); each revision's file
is kept as revisions/v<n>.ifc and the latest is also its model.ifc, converted like an upload. A model whose product
comes from a build script gets its versions by saving and is refused (40900). A revision uploaded while a conversion
runs is merged like any product change: the running conversion runs again on the newest file."""

from __future__ import annotations

import re
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from accounts_app.audit import audit_record
from api.principal import Principal
from core.errors import Conflict, Invalid, NotFound
from core.files import link_or_copy, place_file
from models_app import edit_client
from models_app.models import IfcModel, ModelRevision
from models_app.project_services import project_lock_of_model
from models_app.selectors import model_get, project_of_model
from models_app.services import checked_ifc_upload, queue_conversion
from models_app.storage import IFC_FILE, model_file, revision_file, revisions_dir, script_state_present

VERSION_REQUEST_RE = re.compile(r"v\d{1,9}")  # fullmatch; as the edit service: v0, v01 or v99 are well-formed and answer 404
CURRENT = "current"


def model_is_script_built(model: IfcModel) -> bool:
    """The model's product comes from a build script (or it is a drawing, or has no IFC yet): no uploaded revisions."""
    return model.format != IfcModel.Format.IFC or not model_file(model.id, IFC_FILE).is_file() or script_state_present(model.id)


def uses_revisions(model_id: str) -> bool:
    """The model's versions are its uploaded revisions: it has some and no script took it over since. The revisions
    are asked first: most models have none, and then one query answers (this runs on every proxied versions call)."""
    if not ModelRevision.objects.filter(model_id=model_id).exists():
        return False
    model = IfcModel.objects.filter(pk=model_id).first()
    return model is not None and not model_is_script_built(model)


def _refuse_script_built(model: IfcModel) -> None:
    if model_is_script_built(model):
        raise Conflict(
            f"model {model.id} is built by a script (or is a drawing): it gets new versions by saving its script "
            "(POST /api/v1/models/{id}/script/save), not by uploading revisions"
        )


# --- uploading -------------------------------------------------------------------------------------------------


def _place(source: Path, target: Path, made: list[Path]) -> None:
    place_file(source, target, keep_source=True)
    made.append(target)


def model_revision_upload(*, model_id: str, uploaded_file, author: str, by: Principal | None = None) -> ModelRevision:
    """POST /models/{id}/revisions: the uploaded IFC (checked as an upload) becomes the model's next revision and its
    current IFC, queued for conversion. At the first revision the model's IFC so far is recorded as v1. Files and
    records both or neither: a failure leaves the model as it was."""
    model = model_get(model_id)
    _refuse_script_built(model)
    name, temp_path = checked_ifc_upload(uploaded_file)
    current = model_file(model.id, IFC_FILE)
    made: list[Path] = []
    replaced_from: Path | None = None
    try:
        with project_lock_of_model(model.id), transaction.atomic():
            model = IfcModel.objects.select_for_update().filter(pk=model.id).first()
            if model is None:
                raise NotFound(f"model {model_id} not found")
            _refuse_script_built(model)  # again, holding the model: a script may have taken it over meanwhile
            latest = ModelRevision.objects.filter(model=model).order_by("-number").first()
            revisions_dir(model.id).mkdir(exist_ok=True)
            if latest is None:
                first = revision_file(model.id, "v1")
                _place(current, first, made)
                latest = ModelRevision.objects.create(model=model, number=1, name=model.name, size=first.stat().st_size, uploaded_at=model.created_at)
            target = revision_file(model.id, f"v{latest.number + 1}")
            _place(temp_path, target, made)
            revision = ModelRevision.objects.create(
                model=model, number=latest.number + 1, name=name, size=uploaded_file.size, uploaded_at=timezone.now(), author=author,
            )
            place_file(target, current, keep_source=True)
            replaced_from = revision_file(model.id, latest.version)
            model.size = uploaded_file.size
            queue_conversion(model)  # saves the model; merged into a queued or running conversion
    except BaseException:
        if replaced_from is not None:
            place_file(replaced_from, current, keep_source=True)
        for path in made:
            path.unlink(missing_ok=True)
        raise
    if by is not None:
        audit_record(by, "model.revision", object=f"model:{model.id}", project_id=project_of_model(model.id) or "", detail={"version": revision.version, "name": name})
    return revision


# --- listing and diff (the edit proxy's edit/versions and edit/diff for a model with revisions) ----------------


def revision_list(model_id: str) -> list[ModelRevision]:
    return list(ModelRevision.objects.filter(model=model_get(model_id)).order_by("number"))


def revision_versions(model_id: str, body=None) -> dict:
    """The spec's versions response over the revisions: {versions: [{version, createdAt, author, fileName, size}],
    current: the latest}."""
    revisions = revision_list(model_id)
    return {
        "versions": [
            {"version": r.version, "createdAt": r.uploaded_at, "author": r.author, "fileName": r.name, "size": r.size}
            for r in revisions
        ],
        "current": revisions[-1].version if revisions else None,
    }


def _requested(body, field: str, *, current_allowed: bool) -> str:
    value = body.get(field) if isinstance(body, dict) else None
    if value is None:
        raise Invalid(f"{field}: this field is required")
    if not isinstance(value, str) or not (VERSION_REQUEST_RE.fullmatch(value) or (current_allowed and value == CURRENT)):
        allowed = "a version v<n> or current" if current_allowed else "a version v<n> (only target may be current)"
        shown = repr(value) if not isinstance(value, str) or len(value) <= 40 else repr(value[:40] + "…")
        raise Invalid(f"{field}: {shown} is not {allowed}")
    return value


def _span(versions: list[str]) -> str:
    return "none" if not versions else versions[0] if len(versions) == 1 else f"{versions[0]} to {versions[-1]}"


def revision_diff(model_id: str, body) -> dict:
    """The spec's diff response between two revisions ({base, target: v<n> or current}), with labels (GlobalId ->
    readable name) as the upload diff has. An unknown revision answers 40400. Revisions never change: the edit
    service caches their snapshots and diffs, also when the target was asked for as current."""
    base = _requested(body, "base", current_allowed=False)
    target = _requested(body, "target", current_allowed=True)
    revisions = [r.version for r in revision_list(model_id)]
    resolved = revisions[-1] if target == CURRENT and revisions else target
    for version in (base, resolved):
        if version not in revisions:
            raise NotFound(f"model {model_id} has no version {version} (revisions: {_span(revisions)})")
    payload = edit_client.call("POST", f"/models/{model_id}/revisions/diff", json={"base": base, "target": resolved})
    return {**payload, "base": base, "target": target}


def revision_source(model_id: str, version: str) -> Path | None:
    """The stored IFC of a revision when the model's versions are its revisions (a version geometry converts it),
    else None."""
    if not uses_revisions(model_id):
        return None
    path = revision_file(model_id, version)
    return path if path.is_file() else None


def saved_versions(model_id: str) -> list[str]:
    """The versions v<n> the model has: its uploaded revisions, or the big versions its script saved."""
    if uses_revisions(model_id):
        return [revision.version for revision in revision_list(model_id)]
    listing = edit_client.call("GET", f"/models/{model_id}/versions")
    return [item.get("version") for item in listing.get("versions") or []]


def version_product_key(model_id: str, version: str) -> str:
    """What a saved version's IFC is, for caches: revisions and a script's versions are both numbered v1, v2, ...,
    so a script taking an uploaded model over must not meet the revisions' results."""
    return f"revision:{version}" if uses_revisions(model_id) else version


def version_ifc_fetch(model_id: str, version: str, target: Path) -> str:
    """Puts the IFC of the saved version at target (an uploaded revision's stored file, or the script's version
    rebuilt by the edit service); answers its version_product_key."""
    revision = revision_source(model_id, version)
    if revision is not None:
        link_or_copy(revision, target)
        return f"revision:{version}"
    edit_client.version_ifc_download(model_id, version, target)
    return version
