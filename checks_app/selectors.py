"""Read-side queries of automated review: a project's IDS files, a model's checks."""

from __future__ import annotations

import re

from django.db.models import TextField
from django.db.models.functions import Cast

from checks_app.models import CHECK_ID_PATTERN, IDS_NAME_PATTERN, Check, IdsFile
from checks_app.projects import project_get
from core.errors import Conflict
from core.lookups import get_or_not_found
from models_app.selectors import model_get

CHECK_ID_RE = re.compile(rf"^{CHECK_ID_PATTERN}$")
IDS_NAME_RE = re.compile(rf"^{IDS_NAME_PATTERN}$")


def ids_file_list(project_id: str):
    return IdsFile.objects.filter(project=project_get(project_id)).select_related("document").order_by("name")


def ids_file_get(project_id: str, name: str) -> IdsFile:
    project = project_get(project_id)
    return get_or_not_found(
        IdsFile.objects.select_related("document"), project=project, name=name,
        well_formed=bool(IDS_NAME_RE.match(name or "")) and ".." not in name,
        invalid=f"IDS file {name!r} not found (names are letters, digits, '.', '_' and '-')",
        missing=f"project {project.id} has no IDS file {name!r}",
    )


def check_list(model_id: str):
    """The model's checks, newest first, without their (possibly large) results."""
    return Check.objects.filter(model=model_get(model_id)).defer("result", "overrides").order_by("-created_at")


def check_get(model_id: str, check_id: str, *, result_as_json: bool = False) -> Check:
    """The model's check. result_as_json: its result is left undecoded, as the JSON text the database holds in
    check.result_json (None until done), for an answer that passes it on as it is (a result is up to megabytes)."""
    model = model_get(model_id)
    rows = Check.objects.defer("result").annotate(result_json=Cast("result", TextField())) if result_as_json else Check.objects
    return get_or_not_found(
        rows, pk=check_id, model=model, well_formed=bool(CHECK_ID_RE.match(check_id or "")),
        invalid=f"check {check_id!r} not found (ids look like chk_ + 16 lowercase hex digits)",
        missing=f"check {check_id} not found in model {model.id}",
    )


def done_check_get(model_id: str, check_id: str) -> Check:
    """A check whose result exists; Conflict while it is queued or running, or when it failed."""
    check = check_get(model_id, check_id)
    if check.status != Check.Status.DONE:
        detail = f": {check.error}" if check.status == Check.Status.FAILED else ""
        raise Conflict(f"check {check.id} is {check.status}{detail}; its result exists once it is done")
    return check
