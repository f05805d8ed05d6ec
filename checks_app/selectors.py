"""Read-side queries of automated review: a project's IDS files, a model's checks."""

from __future__ import annotations

import re

from checks_app.models import CHECK_ID_PATTERN, IDS_NAME_PATTERN, Check, IdsFile
from checks_app.projects import project_get
from models_app.selectors import model_get
from viewer_gateway.envelope import NotFound

CHECK_ID_RE = re.compile(rf"^{CHECK_ID_PATTERN}$")
IDS_NAME_RE = re.compile(rf"^{IDS_NAME_PATTERN}$")


def ids_file_list(project_id: str):
    return IdsFile.objects.filter(project=project_get(project_id)).select_related("document").order_by("name")


def ids_file_get(project_id: str, name: str) -> IdsFile:
    project = project_get(project_id)
    if not IDS_NAME_RE.match(name or "") or ".." in name:
        raise NotFound(f"IDS file {name!r} not found (names are letters, digits, '.', '_' and '-')")
    try:
        return IdsFile.objects.select_related("document").get(project=project, name=name)
    except IdsFile.DoesNotExist:
        raise NotFound(f"project {project.id} has no IDS file {name!r}") from None


def check_list(model_id: str):
    """The model's checks, newest first, without their (possibly large) results."""
    return Check.objects.filter(model=model_get(model_id)).defer("result", "overrides").order_by("-created_at")


def check_get(model_id: str, check_id: str) -> Check:
    model = model_get(model_id)
    if not CHECK_ID_RE.match(check_id or ""):
        raise NotFound(f"check {check_id!r} not found (ids look like chk_ + 16 lowercase hex digits)")
    try:
        return Check.objects.get(pk=check_id, model=model)
    except Check.DoesNotExist:
        raise NotFound(f"check {check_id} not found in model {model.id}") from None
