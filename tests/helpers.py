"""Shared test helpers: sample files, XKT reading, small IFC payloads, polling."""

from __future__ import annotations

import json
import os
import re
import struct
import time
import zlib
from pathlib import Path
from typing import Callable, TypeVar

import pytest

T = TypeVar("T")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = Path(os.environ.get("VIEWER_SAMPLES_DIR") or ROOT.parent / "shared" / "ifc-samples")
MINIMAL_IFC = b"""ISO-10303-21;
HEADER;
FILE_DESCRIPTION((''),'2;1');
FILE_NAME('tiny.ifc','2026-01-01T00:00:00',(''),(''),'','','');
FILE_SCHEMA(('IFC4'));
ENDSEC;
DATA;
#1=IFCPROJECT('0YvctVUKr0kugbFTf53O9L',$,'Tiny',$,$,$,$,$,$);
ENDSEC;
END-ISO-10303-21;
"""


def sample(name: str) -> Path:
    path = SAMPLES_DIR / name
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"sample {path} is missing; CI must have ../shared/ifc-samples")
        pytest.skip(f"sample {path} not available (../shared/ifc-samples is missing)")
    return path


def sample_files() -> list[Path]:
    if not SAMPLES_DIR.is_dir():
        return []
    return sorted(SAMPLES_DIR.glob("*.ifc"))


XKT_ENTITY_ID_ELEMENT = 25  # index of eachEntityId among the XKT v12 elements (xeokit-convert writer)


def xkt_entity_ids(data: bytes) -> list[str]:
    """Entity ids from an XKT v10+ file, compressed (deflate) or not."""
    (word,) = struct.unpack_from("<I", data, 0)
    compressed = bool(word & 0x80000000)
    version = word & 0x7FFFFFFF
    assert version >= 10, f"unexpected XKT version {version}"
    if compressed:
        (count,) = struct.unpack_from("<I", data, 4)
        sizes = struct.unpack_from(f"<{count}I", data, 8)
        offset = 8 + 4 * count
        offsets = []
        for size in sizes:
            offsets.append((offset, size))
            offset += size
        start, size = offsets[XKT_ENTITY_ID_ELEMENT]
        return json.loads(zlib.decompress(data[start:start + size]))
    index = 1 + 2 * XKT_ENTITY_ID_ELEMENT
    start, size = struct.unpack_from("<II", data, index * 4)
    return json.loads(data[start:start + size])


STEP_GUID_RE = re.compile(rb"^#\d+\s*=\s*(IFC[A-Z0-9_]+)\s*\(\s*'([0-9A-Za-z_$]{22})'", re.MULTILINE)


def step_instances(path: Path) -> list[tuple[str, str]]:
    """(CLASS, GlobalId) of every rooted instance, read from the STEP text (works for any schema)."""
    return [(m.group(1).decode(), m.group(2).decode()) for m in STEP_GUID_RE.finditer(path.read_bytes())]


def poll(fetch: Callable[[], T], done: Callable[[T], bool], timeout: float = 300, interval: float = 0.05) -> T:
    """Calls fetch until done(its result), which it returns; TimeoutError with the last result after timeout s."""
    deadline = time.monotonic() + timeout
    while True:
        result = fetch()
        if done(result):
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"still {result!r} after {timeout} s")
        time.sleep(interval)


def ok(response):
    """The data of an envelope that says success (code 0); the whole body in the failure otherwise."""
    body = response.json()
    assert body["code"] == 0, body
    return body["data"]


def skip_without_run_cgroups() -> None:
    """Skips the calling test where this machine cannot make run cgroups (sandboxing.cgroups.describe says why)."""
    from sandboxing import cgroups

    problem, _ = cgroups.describe()
    if problem:
        pytest.skip(f"no run cgroups can be made on this machine: {problem}")
