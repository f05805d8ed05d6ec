"""Neutral names for the host's install paths in texts a caller sees: a traceback or an OS error names files by
their absolute path (the checkout, the virtualenv, Python's own library, the data directory)."""

from __future__ import annotations

import json
import os
import re
import sys
import sysconfig
import tempfile
from functools import lru_cache
from pathlib import Path

INSTALL_ROOT = Path(__file__).resolve().parents[1]
# a system interpreter's prefix names no installation, and "<python>/bin/bwrap" would mislead
SYSTEM_PREFIXES = frozenset({"/", "/usr", "/usr/local"})


def host_prefixes(data_dir: str | os.PathLike) -> dict[str, str]:
    """path -> neutral name, for this installation and the given data directory; each path also as the system
    resolves it (a symlinked checkout or data directory appears resolved in some texts)."""
    prefixes = {
        str(data_dir): "<data>",
        sys.prefix: "<venv>",
        str(INSTALL_ROOT): "<install>",
        sysconfig.get_paths()["stdlib"]: "<python>",
        sys.base_prefix: "<python>",
        tempfile.gettempdir(): "<tmp>",
        str(Path.home()): "<home>",
    }
    for path, name in list(prefixes.items()):
        prefixes.setdefault(str(Path(path).resolve()), name)
    return {path: name for path, name in prefixes.items() if path not in SYSTEM_PREFIXES}


def json_forms(prefixes: dict[str, str]) -> dict[str, str]:
    """The prefixes as a JSON text may write them: as they are, and escaped as JSON escapes them (a non-ASCII
    character as \\uXXXX, which json.dumps writes by default: a check's result as the database keeps it)."""
    forms = dict(prefixes)
    for path, name in prefixes.items():
        forms.setdefault(json.dumps(path)[1:-1], name)
    return forms


@lru_cache(maxsize=8)
def _pattern(prefixes: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    ordered = sorted((path for path, _ in prefixes), key=len, reverse=True)  # the data directory may lie inside the checkout
    # a prefix counts only as a whole path component: /tmp must not eat /tmpfiles
    return re.compile("(?:" + "|".join(map(re.escape, ordered)) + r")(?![\w.-])")


def neutral_paths(text: str, prefixes: dict[str, str]) -> str:
    """`text` with every path of `prefixes` replaced by its neutral name."""
    if not any(prefix in text for prefix in prefixes):
        return text
    return _pattern(tuple(sorted(prefixes.items()))).sub(lambda match: prefixes[match.group(0)], text)


def neutral_paths_in(detail, prefixes: dict[str, str]):
    """neutral_paths() on every string of a structure of lists and dicts (an error detail)."""
    if isinstance(detail, str):
        return neutral_paths(detail, prefixes)
    if isinstance(detail, list):
        return [neutral_paths_in(item, prefixes) for item in detail]
    if isinstance(detail, dict):
        return {key: neutral_paths_in(value, prefixes) for key, value in detail.items()}
    return detail
