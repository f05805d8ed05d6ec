"""Read-side queries of projects (a project is a group of models)."""

from __future__ import annotations

import re

from models_app.models import PROJECT_ID_PATTERN, IfcModel, Project, ProjectModel
from viewer_gateway.envelope import NotFound

PROJECT_ID_RE = re.compile(rf"^{PROJECT_ID_PATTERN}$")


def project_get(project_id: str) -> Project:
    if not PROJECT_ID_RE.match(project_id or ""):
        raise NotFound(f"project {project_id!r} not found (ids look like p_ + 16 lowercase hex digits)")
    try:
        return Project.objects.get(pk=project_id)
    except Project.DoesNotExist:
        raise NotFound(f"project {project_id} not found") from None


def project_exists(project_id: str) -> bool:
    return bool(PROJECT_ID_RE.match(project_id or "")) and Project.objects.filter(pk=project_id).exists()


def project_models(project: Project | str):
    """The project's models, in the order they were added."""
    project_id = project if isinstance(project, str) else project.id
    return IfcModel.objects.filter(project_link__project_id=project_id).order_by("project_link__id")


def project_model_ids(project: Project | str) -> list[str]:
    project_id = project if isinstance(project, str) else project.id
    return list(ProjectModel.objects.filter(project_id=project_id).order_by("id").values_list("model_id", flat=True))


def project_model_of_format(project: Project | str, model_format: str) -> IfcModel | None:
    """The project's first model of a format: its drawing (dxf) or its IFC model (ifc)."""
    return project_models(project).filter(format=model_format).first()


def project_of_model(model_id: str) -> str | None:
    """The id of the project the model belongs to, None for a model outside any project."""
    return ProjectModel.objects.filter(model_id=model_id).values_list("project_id", flat=True).first()
