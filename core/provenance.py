"""Who made a change: an author name and a provenance source (UI or AI).

Both are self-declared by the caller (spec, Authentication rule 6). The serializer fields that read them from a
request, with their defaults for missing, null or blank values, are in api/fields.py.
"""

from django.db import models

DEFAULT_AUTHOR = "local-user"
AGENT_AUTHOR = "agent"


class Provenance(models.TextChoices):
    UI = "UI"
    AI = "AI"


def provenance_error(value) -> str:
    source = value.get("source") if isinstance(value, dict) else value
    return f"provenance.source must be UI or AI, got {source!r}"
