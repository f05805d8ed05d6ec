"""Neutral names for the host's install paths in texts a client of the gateway sees (core.host_paths with the
gateway's data directory)."""

from __future__ import annotations

from functools import cache

from django.conf import settings

from core.host_paths import host_prefixes
from core.host_paths import neutral_paths as _neutral_paths


@cache
def _prefixes() -> dict[str, str]:
    return host_prefixes(settings.DATA_DIR)


def neutral_paths(text: str) -> str:
    """`text` with every host install path replaced by its neutral name (<data>, <venv>, <install>, ...)."""
    return _neutral_paths(text, _prefixes())


def neutral_paths_in_json(body: bytes) -> bytes:
    """neutral_paths() on a JSON document's bytes (paths are ASCII and JSON leaves '/' unescaped)."""
    if not any(prefix.encode() in body for prefix in _prefixes()):
        return body
    return neutral_paths(body.decode("utf-8")).encode("utf-8")
