"""The one read every selector by id repeats: check that the id can be one (a client's typo answers NotFound without
a query), then fetch the row or answer NotFound."""

from __future__ import annotations

from django.db import models

from core.errors import NotFound


def get_or_not_found(rows: models.QuerySet | models.Manager, *, well_formed: bool, invalid: str, missing: str, **lookup):
    """The row of `rows` that matches lookup. NotFound(invalid) when the id is not well formed (no query is made),
    NotFound(missing) when no row matches."""
    if not well_formed:
        raise NotFound(invalid)
    try:
        return rows.get(**lookup)
    except rows.model.DoesNotExist:
        raise NotFound(missing) from None
