"""Read-side queries of the models app: models (by id, the list, their metadata and download file) and projects
(a project is a group of models)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from core.errors import NotFound
from core.lookups import get_or_not_found
from django.db.models import Max

from models_app.models import PROJECT_ID_PATTERN, IfcModel, ModelRevision, Project, ProjectModel
from models_app.storage import (
    BOOTSTRAP_IFC_FILE,
    DXF_FILE,
    IFC_FILE,
    METADATA_FILE,
    MODEL_ID_RE,
    file_signature,
    latest_saved_product,
    model_file,
    script_state_present,
)

PROJECT_ID_RE = re.compile(rf"^{PROJECT_ID_PATTERN}$")


# --- models ----------------------------------------------------------------------------------------------------


def model_get(model_id: str) -> IfcModel:
    return get_or_not_found(
        IfcModel.objects, pk=model_id, well_formed=bool(MODEL_ID_RE.match(model_id or "")),
        invalid=f"invalid model id {model_id!r}: expected m_ followed by 16 lowercase hex digits", missing=f"model {model_id} not found",
    )


def model_list():
    return IfcModel.objects.order_by("-created_at")


def model_exists(model_id: str) -> bool:
    return bool(MODEL_ID_RE.match(model_id or "")) and IfcModel.objects.filter(pk=model_id).exists()


def model_metadata(model_id: str) -> dict:
    """The model's metadata.json (the meta-model of its last conversion)."""
    model = model_get(model_id)
    try:
        with open(model_file(model.id, METADATA_FILE), encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise NotFound(f"model {model.id} has no metadata yet (status {model.status})") from None


def model_current_version(model_id: str) -> str:
    """The version "v<n>" the model's current product is: its latest saved script version when a build script makes
    it (read from storage, no edit-service call), else its last uploaded revision, else "v1" (a first upload)."""
    model = IfcModel.objects.filter(pk=model_id).only("format").first()
    if model is not None and script_state_present(model.id):
        saved = latest_saved_product(model.id, ".dxf" if model.format == IfcModel.Format.DXF else ".ifc")
        if saved is not None:
            return saved.stem
    number = ModelRevision.objects.filter(model_id=model_id).aggregate(last=Max("number"))["last"]
    return f"v{number or 1}"


def model_ready_product_is_saved(model_id: str) -> bool:
    """Whether the product the model's last conversion made ready (IfcModel.converted_ifc) is a saved version, not
    the preview of a script run that is not saved (a script's run converts its working product too). An uploaded
    model's product is always its last revision; a script's saved version is a hard link of model.ifc taken at the
    save, so the converted file is that version when their signatures agree."""
    model = IfcModel.objects.filter(pk=model_id).only("converted_ifc").first()
    if model is None or not script_state_present(model_id):
        return model is not None
    saved = latest_saved_product(model_id)
    try:
        return saved is not None and file_signature(saved) == model.converted_ifc
    except FileNotFoundError:
        return False


def model_saved_script_ifc(model_id: str) -> Path | None:
    """The IFC of the model's latest saved script version (what model_current_version names for a script-built
    model), None when its script saved none."""
    return latest_saved_product(model_id)


def model_download_file(model_id: str, *, current_product: bool = False) -> tuple[IfcModel, Path]:
    """The IFC a download serves: the original (the upload, kept as bootstrap.ifc once a script took the model
    over; for a model born from a script, its latest saved version), never an unsaved preview; or, when asked
    for, the current working product (model.ifc, possibly an unsaved run)."""
    model = model_get(model_id)
    if model.format == IfcModel.Format.DXF:
        candidates = [model_file(model.id, DXF_FILE)] if current_product else [latest_saved_product(model.id, ".dxf"), model_file(model.id, DXF_FILE)]
    else:
        candidates = [model_file(model.id, IFC_FILE)] if current_product else [
            model_file(model.id, BOOTSTRAP_IFC_FILE), latest_saved_product(model.id), model_file(model.id, IFC_FILE)
        ]
    for path in candidates:
        if path is not None and path.is_file():
            return model, path
    raise NotFound(f"model {model.id} has no {model.format.upper()} file")


# --- projects --------------------------------------------------------------------------------------------------


def project_get(project_id: str) -> Project:
    return get_or_not_found(
        Project.objects, pk=project_id, well_formed=bool(PROJECT_ID_RE.match(project_id or "")),
        invalid=f"project {project_id!r} not found (ids look like p_ + 16 lowercase hex digits)", missing=f"project {project_id} not found",
    )


def project_exists(project_id: str) -> bool:
    return bool(PROJECT_ID_RE.match(project_id or "")) and Project.objects.filter(pk=project_id).exists()


def project_models(project: Project | str):
    """The project's models, in the order they were added."""
    project_id = project if isinstance(project, str) else project.id
    return IfcModel.objects.filter(project_link__project_id=project_id).order_by("project_link__id")


def project_model_ids(project: Project | str) -> list[str]:
    project_id = project if isinstance(project, str) else project.id
    return list(ProjectModel.objects.filter(project_id=project_id).order_by("id").values_list("model_id", flat=True))


def project_links(project: Project | str):
    """The project's membership rows (model, discipline), in the order the models were added, models selected."""
    project_id = project if isinstance(project, str) else project.id
    return ProjectModel.objects.filter(project_id=project_id).select_related("model").order_by("id")


def project_model_of_format(project: Project | str, model_format: str) -> IfcModel | None:
    """The project's first model of a format: its drawing (dxf) or its IFC model (ifc)."""
    return project_models(project).filter(format=model_format).first()


def project_of_model(model_id: str) -> str | None:
    """The id of the project the model belongs to, None for a model outside any project."""
    return ProjectModel.objects.filter(model_id=model_id).values_list("project_id", flat=True).first()
