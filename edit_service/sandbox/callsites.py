"""Call sites of the contract factories (script_lib.create_entity, dxf_lib.create_entity), recorded while a build
script runs in the sandbox and written out by the runner as the script map: designKey -> {line, col, snippet,
repeated}."""

from __future__ import annotations

import json
import linecache
import os
import sys
from collections import defaultdict

_sites: dict[str, dict] = {}
_keys_by_site: dict[tuple[int, int], list[str]] = defaultdict(list)
_script_path: str | None = None


def set_script_path(path: str) -> None:
    global _script_path
    _script_path = os.path.abspath(path)


def seen(key: str) -> bool:
    return key in _sites


def record(key: str) -> None:
    """Line, column and source snippet of the factory call in the build script (the innermost frame of it)."""
    frame = sys._getframe(2)
    while frame is not None and os.path.abspath(frame.f_code.co_filename) != _script_path:
        frame = frame.f_back
    if frame is None:
        return
    line, col = frame.f_lineno, 0
    positions = list(frame.f_code.co_positions())
    index = frame.f_lasti // 2
    if 0 <= index < len(positions) and positions[index][0] is not None:
        line, col = positions[index][0], positions[index][2] or 0
    snippet = linecache.getline(frame.f_code.co_filename, line).strip()
    _sites[key] = {"line": line, "col": col, "snippet": snippet}
    _keys_by_site[(line, col)].append(key)


def recorded_map() -> dict[str, dict]:
    """designKey -> {line, col, snippet, repeated}: repeated when one call site made several elements."""
    return {key: {**site, "repeated": len(_keys_by_site[(site["line"], site["col"])]) > 1} for key, site in _sites.items()}


def dump_map(path: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(recorded_map(), handle)
