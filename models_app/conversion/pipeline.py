"""The ifcopenshell stage of a conversion: IFC -> metadata.json, element-values.json, the geometry records,
element-bounds.json, clash-geometry.bin (every element's triangles, for the clash engine) and georeference.json
(georeference.py's placement of the model in its map frame). It runs in a child of the sandboxed conversion zygote
(zygote.py), which has its files only as descriptors, all opened by the worker: the IFC to read, the six outputs to
write (in the conversion's own work folder) and a progress pipe. georeference.json stays empty when the placement
cannot be read (the runner then drops it; the federation reads the IFC itself).

Each output is streamed while it is produced (metadata and element values object by object, geometry element by
element), so the stage holds the parsed IFC and little else. Progress goes out as JSON lines {"phase", "percent"}.
A file of one of IFC4X3's release candidates (IFC4X3_RC1..RC4, which ifcopenshell does not ship) is read as the
final release IFC4X3_ADD2 and one line {"note": ...} says so; when ifcopenshell cannot open the file even so, one
line {"fallback": reason} says why and the worker converts with xeokit-convert's own IFC parser instead. Kept free
of Django.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import threading
import time

METADATA_FILE = "metadata.json"
ELEMENT_VALUES_FILE = "element-values.json"
GEOMETRY_FILE = "geometry.bin"
ELEMENT_BOUNDS_FILE = "element-bounds.json"
CLASH_GEOMETRY_FILE = "clash-geometry.bin"
GEOREFERENCE_FILE = "georeference.json"
STAGE_OUTPUTS = (METADATA_FILE, ELEMENT_VALUES_FILE, GEOMETRY_FILE, ELEMENT_BOUNDS_FILE, CLASH_GEOMETRY_FILE, GEOREFERENCE_FILE)
WRITE_BUFFER_BYTES = 1 << 20
# (phase, first percent, last percent), after the time each takes on large files; xkt (node) follows from 85
STAGES = (("reading", 1, 5), ("metadata", 5, 20), ("values", 20, 30), ("geometry", 30, 85))
READ_BYTES_PER_SECOND = 25 * 1024 * 1024  # ifcopenshell.open on this machine, for the reading estimate
TICK_SECONDS = 1.0
# What the conversion writes (classes, names, the object tree, property sets, shapes) is the same in IFC4X3's release
# candidates and in its final release; attributes that moved between them are not among its outputs.
RELEASE_CANDIDATE_SCHEMA = re.compile(rb"(FILE_SCHEMA\s*\(\s*\(\s*')(IFC4X3_RC\d)('\s*\)\s*\))", re.IGNORECASE)
FINAL_RELEASE = b"IFC4X3_ADD2"
HEADER_BYTES = 64 * 1024

log = logging.getLogger(__name__)


class Progress:
    def __init__(self, fd: int):
        self.channel = open(fd, "w", encoding="utf-8", closefd=False)
        self.lock = threading.Lock()  # the reading ticker writes from its own thread

    def send(self, line: dict) -> None:
        with self.lock:
            self.channel.write(json.dumps(line) + "\n")
            self.channel.flush()

    def report(self, phase: str, percent: float) -> None:
        self.send({"phase": phase, "percent": int(percent)})

    def stage(self, phase: str):
        """A callback fraction -> percent within the stage's range."""
        first, last = next((first, last) for name, first, last in STAGES if name == phase)
        return lambda fraction: self.report(phase, first + (last - first) * min(1.0, fraction))


class _ReadingTicker:
    """ifcopenshell.open is one long call (seconds on a large file; it releases the GIL): the reading progress
    moves meanwhile by the time it is expected to take."""

    def __init__(self, progress: Progress, size: int):
        self.report, self.expected = progress.stage("reading"), max(1.0, size / READ_BYTES_PER_SECOND)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        started = time.monotonic()
        while not self.done.wait(TICK_SECONDS):
            self.report(0.95 * min(1.0, (time.monotonic() - started) / self.expected))

    def __enter__(self):
        self.thread.start()

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()


def _as_final_release(ifc_fd: int) -> tuple[int, str] | None:
    """A memory file holding the IFC with its header naming IFC4X3_ADD2 instead of a release candidate, and that
    candidate's name; None when the header names no release candidate."""
    head = os.pread(ifc_fd, HEADER_BYTES, 0)
    header_end = head.upper().find(b"ENDSEC")
    match = RELEASE_CANDIDATE_SCHEMA.search(head, 0, header_end) if header_end >= 0 else None
    if match is None:
        return None
    copy = os.memfd_create("ifc-final-release", os.MFD_CLOEXEC)
    with open(copy, "wb", closefd=False) as writer:
        writer.write(head[:match.start(2)] + FINAL_RELEASE + head[match.end(2):header_end])
    offset, size = header_end, os.fstat(ifc_fd).st_size
    while offset < size:
        offset += os.sendfile(copy, ifc_fd, offset, size - offset)
    return copy, match.group(2).decode("ascii").upper()


def open_ifc(ifc_fd: int, progress: Progress):
    """The IFC opened by ifcopenshell (a release candidate of IFC4X3 as its final release, saying so)."""
    import ifcopenshell

    try:
        return ifcopenshell.open(f"/proc/self/fd/{ifc_fd}", ".ifc")
    except ifcopenshell.SchemaError:
        final_release = _as_final_release(ifc_fd)
        if final_release is None:
            raise
    copy, candidate = final_release
    try:
        ifc = ifcopenshell.open(f"/proc/self/fd/{copy}", ".ifc")
    finally:
        os.close(copy)
    progress.send({"note": f"schema {candidate} (a release candidate) read as its final release {FINAL_RELEASE.decode()}"})
    return ifc


@contextlib.contextmanager
def _nothing():
    yield None


def _text_output(fd: int):
    return io.TextIOWrapper(io.BufferedWriter(io.FileIO(fd, "w", closefd=True), WRITE_BUFFER_BYTES), encoding="utf-8")


def write_georeference(ifc, fd: int) -> None:
    """georeference.json: the model's placement in its map frame; nothing (an empty file) when it cannot be read."""
    with open(fd, "w", encoding="utf-8", closefd=True) as handle:
        try:
            from models_app.conversion.georeference import georeference

            placement = georeference(ifc)
        except Exception:  # noqa: BLE001 - a placement it cannot read never fails the conversion
            log.warning("no georeference.json: the model's placement could not be read", exc_info=True)
            return
        json.dump(placement, handle, separators=(",", ":"))


def convert(*, ifc_fd: int, metadata_fd: int, values_fd: int, geometry_fd: int, bounds_fd: int, progress_fd: int, threads: int,
            clash_fd: int | None = None, georeference_fd: int | None = None) -> None:
    from models_app.conversion.element_values import write_element_values
    from models_app.conversion.geometry import write_geometry
    from models_app.conversion.metadata import MetaModel

    progress = Progress(progress_fd)
    progress.report("reading", 1)
    try:
        with _ReadingTicker(progress, os.fstat(ifc_fd).st_size):
            ifc = open_ifc(ifc_fd, progress)
    except Exception as exc:  # ifcopenshell raises several types for unsupported schemas and parse errors
        progress.send({"fallback": f"{type(exc).__name__}: {exc}"[:500]})
        return
    with _text_output(metadata_fd) as metadata:
        MetaModel(ifc).write(metadata, progress.stage("metadata"))
    with _text_output(values_fd) as values:
        write_element_values(ifc, values, progress.stage("values"))
    if georeference_fd is not None:
        write_georeference(ifc, georeference_fd)
    with (io.BufferedWriter(io.FileIO(geometry_fd, "w", closefd=True), WRITE_BUFFER_BYTES) as geometry, _text_output(bounds_fd) as bounds,
          (io.BufferedWriter(io.FileIO(clash_fd, "w", closefd=True), WRITE_BUFFER_BYTES) if clash_fd is not None else _nothing()) as clash):
        write_geometry(ifc, geometry, threads, progress.stage("geometry"), bounds, clash)
    progress.report("geometry", 85)
