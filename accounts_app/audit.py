"""The audit trail: who did what, when, from where (docs/security/audit.md). One call per act worth keeping; the
record holds plain values so it outlives the user and the object.

    >>> audit_record(Principal.of(request), "model.delete", object="model:m_0123456789abcdef", project_id="p_...")
"""

from __future__ import annotations

import logging

from django.db import transaction

from accounts_app.models import AuditEvent
from api.principal import Principal

logger = logging.getLogger(__name__)


def audit_record(principal: Principal, action: str, *, object: str = "", project_id: str | None = "", detail: dict | None = None) -> AuditEvent | None:
    """Writes one audit event; a failure to write it is logged, never raised into the act it records."""
    try:
        with transaction.atomic():  # a savepoint: a failed write leaves the caller's transaction (a purge) usable
            return AuditEvent.objects.create(
                username=principal.name[:150], via=principal.via, action=action[:40], object=object[:200],
                project_id=project_id or "", ip=principal.address[:45], detail=detail or {},
            )
    except Exception:
        logger.exception("audit event %s on %s not recorded", action, object)
        return None
