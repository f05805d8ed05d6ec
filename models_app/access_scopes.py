"""Where a model, a project or a trashed item lies, for the access decision (accounts_app.policy.Scope): the
project it belongs to, or the uploader of a model outside any project. Trashed records count: their owners restore
them."""

from __future__ import annotations

import re

from accounts_app.policy import Scope
from models_app.models import MODEL_ID_PATTERN, PROJECT_ID_PATTERN, IfcModel, Project, ProjectModel

MODEL_ID_RE = re.compile(rf"^{MODEL_ID_PATTERN}$")
PROJECT_ID_RE = re.compile(rf"^{PROJECT_ID_PATTERN}$")


def model_scope(model_id: str) -> Scope:
    if not MODEL_ID_RE.match(model_id or ""):
        return Scope(model_id=model_id, exists=False)
    row = IfcModel.with_trashed.filter(pk=model_id).values_list("uploaded_by_id", flat=True)
    if not row:
        return Scope(model_id=model_id, exists=False)
    project_id = ProjectModel.with_trashed.filter(model_id=model_id).values_list("project_id", flat=True).first()
    return Scope(project_id=project_id, model_id=model_id, owner_user_id=row[0])


def project_scope(project_id: str) -> Scope:
    if not PROJECT_ID_RE.match(project_id or "") or not Project.with_trashed.filter(pk=project_id).exists():
        return Scope(project_id=project_id, exists=False)
    return Scope(project_id=project_id)


def trash_item_scope(item_id: str) -> Scope:
    """A trash item's id is the trashed model's or project's own id."""
    return project_scope(item_id) if PROJECT_ID_RE.match(item_id or "") else model_scope(item_id)
