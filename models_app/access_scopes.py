"""Where a model, a project or a trashed item lies, for the access decision (accounts_app.policy.Scope): the
project it belongs to, or the uploader of a model outside any project. Trashed records count: their owners restore
them."""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.db.models import Q, QuerySet

from accounts_app.policy import Scope, decide, visible_project_ids
from accounts_app.roles import Capability
from api.principal import Principal
from models_app.models import MODEL_ID_PATTERN, PROJECT_ID_PATTERN, Deletion, IfcModel, Project

MODEL_ID_RE = re.compile(rf"^{MODEL_ID_PATTERN}$")
PROJECT_ID_RE = re.compile(rf"^{PROJECT_ID_PATTERN}$")


def model_scope(model_id: str) -> Scope:
    if not MODEL_ID_RE.match(model_id or ""):
        return Scope(model_id=model_id, exists=False)
    # one query on every request that names a model: its uploader and its project (the link row kept while trashed)
    row = IfcModel.with_trashed.filter(pk=model_id).values_list("uploaded_by_id", "project_link__project_id").first()
    if row is None:
        return Scope(model_id=model_id, exists=False)
    owner_user_id, project_id = row
    return Scope(project_id=project_id, model_id=model_id, owner_user_id=owner_user_id)


def project_scope(project_id: str) -> Scope:
    if not PROJECT_ID_RE.match(project_id or "") or not Project.with_trashed.filter(pk=project_id).exists():
        return Scope(project_id=project_id, exists=False)
    return Scope(project_id=project_id)


def trash_item_scope(item_id: str) -> Scope:
    """A trash item's id is the trashed model's or project's own id."""
    return project_scope(item_id) if PROJECT_ID_RE.match(item_id or "") else model_scope(item_id)


def models_visible_to(principal: Principal, models: QuerySet[IfcModel]) -> QuerySet[IfcModel]:
    """The models of `models` the principal may read: those of its projects, and the ones it uploaded outside any."""
    project_ids = visible_project_ids(principal)
    if project_ids is None:
        return models
    visible = Q(project_link__project_id__in=project_ids)
    if principal.share is not None and principal.share.model_ids:
        visible &= Q(pk__in=principal.share.model_ids)
    if principal.user_id is not None:
        visible |= Q(project_link__isnull=True, uploaded_by_id=principal.user_id)
    return models.filter(visible)


def deletions_owned_by(principal: Principal, deletions: Iterable[Deletion]) -> list[Deletion]:
    """The trash items the principal may restore or purge: those it would own if they were back."""
    return [d for d in deletions if decide(principal, Capability.OWN, trash_item_scope(d.target_id)).allowed]
