"""Reading the audit trail (docs/security/audit.md): newest first, filtered, a page at a time."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q

from accounts_app.models import AuditEvent

PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


def _older_than(cursor: int | datetime) -> Q:
    """Events after `cursor` in the newest-first order: older than a timestamp, or than an event (same time: lower id)."""
    if isinstance(cursor, datetime):
        return Q(at__lt=cursor)
    at = AuditEvent.objects.filter(pk=cursor).values_list("at", flat=True).first()
    return Q(pk__lt=cursor) if at is None else Q(at__lt=at) | Q(at=at, pk__lt=cursor)


def audit_events(*, project: str | None = None, since: datetime | None = None, user: str | None = None,
                 action: str | None = None, before: int | datetime | None = None, limit: int = PAGE_SIZE) -> list[AuditEvent]:
    """Events newest first. `action` is one action (model.delete) or, without a dot, a family of them (model)."""
    events = AuditEvent.objects.order_by("-at", "-id")
    if project:
        events = events.filter(project_id=project)
    if since is not None:
        events = events.filter(at__gte=since)
    if user:
        events = events.filter(username=user)
    if action:
        events = events.filter(action=action) if "." in action else events.filter(action__startswith=f"{action}.")
    if before is not None:
        events = events.filter(_older_than(before))
    return list(events[:limit])
