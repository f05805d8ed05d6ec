"""Neutral names for the host's install paths in texts a client sees (library exceptions name files by their
absolute path: the checkout, the virtualenv, the data directory, Python's own library)."""

from __future__ import annotations

import re
import sys
import sysconfig
import tempfile
from functools import cache
from pathlib import Path

from django.conf import settings

# a system interpreter's prefix names no installation, and "<python>/bin/node" would mislead
SYSTEM_PREFIXES = frozenset({"/usr", "/usr/local"})


def _host_prefixes() -> dict[str, str]:
    prefixes = {
        str(settings.DATA_DIR): "<data>",
        sys.prefix: "<venv>",
        str(settings.BASE_DIR): "<install>",
        sysconfig.get_paths()["stdlib"]: "<python>",
        **({} if sys.base_prefix in SYSTEM_PREFIXES else {sys.base_prefix: "<python>"}),
        tempfile.gettempdir(): "<tmp>",
        str(Path.home()): "<home>",
    }
    # Paths as the system sees them too (a symlinked checkout or data directory appears resolved in some texts).
    for path, name in list(prefixes.items()):
        prefixes.setdefault(str(Path(path).resolve()), name)
    return {path: name for path, name in prefixes.items() if len(path) > 1}


@cache
def _pattern() -> tuple[re.Pattern[str], dict[str, str]]:
    prefixes = _host_prefixes()
    ordered = sorted(prefixes, key=len, reverse=True)  # the data directory may lie inside the checkout
    # a prefix counts only as a whole path component: /tmp must not eat /tmpfiles
    return re.compile("(?:" + "|".join(map(re.escape, ordered)) + r")(?![\w.-])"), prefixes


def neutral_paths(text: str) -> str:
    """`text` with every host install path replaced by its neutral name (<data>, <venv>, <install>, ...)."""
    pattern, prefixes = _pattern()
    if not any(prefix in text for prefix in prefixes):
        return text  # the common case, decided at C speed
    return pattern.sub(lambda match: prefixes[match.group(0)], text)


def neutral_paths_in_json(body: bytes) -> bytes:
    """neutral_paths() on a JSON document's bytes (paths are ASCII and JSON leaves '/' unescaped)."""
    _, prefixes = _pattern()
    if not any(prefix.encode() in body for prefix in prefixes):
        return body
    return neutral_paths(body.decode("utf-8")).encode("utf-8")
