"""Use cases of share links: a project's owner lets people without an account read the project (or some of its
models) until a date at most 90 days away, with or without downloading the IFC files; revocable at any time. The
secret is shown once; only its SHA-256 is kept (accounts_app/secrets.py).

    >>> link, secret = share_link_create("p_0123456789abcdef", expires_at=in_a_week, model_ids=[], downloads=False,
    ...                                  by=Principal.of(request))
    >>> secret
    'bms_...'                                   # opened at /s/bms_...
    >>> share_link_revoke("p_0123456789abcdef", link.id, by=Principal.of(request))
"""

from __future__ import annotations

from datetime import timedelta

from django.apps import apps
from django.utils import timezone

from accounts_app.audit import audit_record
from accounts_app.models import ShareLink
from accounts_app.secrets import SHARE_PREFIX, new_secret, sha256
from accounts_app.services.users import invalid_field
from api.principal import Principal
from core.errors import NotFound

LONGEST_LIFE = timedelta(days=90)


def _models_outside(project_id: str, model_ids: list[str]) -> list[str]:
    # by the app registry: accounts_app sits below models_app in the import layers
    project_model = apps.get_model("models_app", "ProjectModel")
    inside = set(project_model.objects.filter(project_id=project_id, model_id__in=model_ids).values_list("model_id", flat=True))
    return [model_id for model_id in model_ids if model_id not in inside]


def share_link_create(project_id: str, *, expires_at, model_ids: list[str], downloads: bool, by: Principal) -> tuple[ShareLink, str]:
    """A new link to the project (all its models when model_ids is empty) and its secret, which nobody can read again."""
    now = timezone.now()
    if expires_at <= now:
        raise invalid_field("expiresAt", ["must lie in the future"])
    if expires_at > now + LONGEST_LIFE:
        raise invalid_field("expiresAt", [f"at most {LONGEST_LIFE.days} days from now"])
    model_ids = list(dict.fromkeys(model_ids))
    outside = _models_outside(project_id, model_ids)
    if outside:
        raise invalid_field("models", [f"not models of project {project_id}: {', '.join(outside)}"])
    secret = new_secret(SHARE_PREFIX)
    link = ShareLink.objects.create(project_id=project_id, created_by_id=by.user_id, model_ids=model_ids, downloads=downloads,
                                    secret_sha256=sha256(secret), expires_at=expires_at)
    audit_record(by, "share-link.create", object=f"share-link:{link.id}", project_id=project_id,
                 detail={"models": model_ids, "downloads": downloads, "expiresAt": expires_at.isoformat()})
    return link, secret


def share_link_list(project_id: str):
    return ShareLink.objects.filter(project_id=project_id).select_related("created_by")


def share_link_get(project_id: str, link_id: str) -> ShareLink:
    link = share_link_list(project_id).filter(pk=link_id).first()
    if link is None:
        raise NotFound(f"share link {link_id} not found in project {project_id}")
    return link


def share_link_revoke(project_id: str, link_id: str, by: Principal) -> ShareLink:
    """Closes the link at once (a browser that opened it loses access on its next request); revoking again changes nothing."""
    link = share_link_get(project_id, link_id)
    if link.revoked_at is None:
        link.revoked_at = timezone.now()
        link.save(update_fields=["revoked_at"])
        audit_record(by, "share-link.revoke", object=f"share-link:{link.id}", project_id=project_id)
    return link
