"""Neutral names for the host's install paths in texts a client of the gateway sees (core.host_paths with the
gateway's data directory)."""

from __future__ import annotations

from functools import cache

from django.conf import settings

from core.host_paths import host_prefixes, json_forms
from core.host_paths import neutral_paths as _neutral_paths


@cache
def _prefixes() -> dict[str, str]:
    return host_prefixes(settings.DATA_DIR)


def neutral_paths(text: str) -> str:
    """`text` with every host install path replaced by its neutral name (<data>, <venv>, <install>, ...)."""
    return _neutral_paths(text, _prefixes())


@cache
def _prefixes_in_json() -> dict[str, str]:
    return json_forms(_prefixes())


def neutral_paths_in_json(body: bytes) -> bytes:
    """neutral_paths() on a JSON document's bytes, a path found as JSON writes it: as it is (JSON leaves '/'
    unescaped) or with its non-ASCII characters escaped (a result passed on as the database keeps it)."""
    prefixes = _prefixes_in_json()
    if not any(prefix.encode() in body for prefix in prefixes):
        return body
    return _neutral_paths(body.decode("utf-8"), prefixes).encode("utf-8")
