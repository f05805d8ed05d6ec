"""The meshes a clash run works on: a model's clash-geometry.bin, which its conversion wrote while it meshed the
elements (models_app/clash_geometry_format.py describes the format), read here without Django.

`load(path)` reads the whole file once and keeps it as one buffer: each element's vertices and triangles are views
into it (no copy), so a loaded model costs the file's size and a few small arrays.
`build_clash_geometry(ifc_path, out_path, on_progress)` meshes an IFC in a child process, for tests and the benchmark
(a clash run meshes the IFCs it needs in its confined child: coordination_app.run_child).
"""

from __future__ import annotations

import json
import os
import select
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from coordination_app.engine.errors import Cancelled
from models_app.clash_geometry_format import ELEMENT, END, END_RECORD, HEADER, MAGIC, PLACE, PLACE_DOUBLES, padding

WRITER_MODULE = "models_app.conversion.clash_meshing"
POLL_SECONDS = 0.1


class GeometryError(ValueError):
    """The file is not clash geometry, or is cut short."""


@dataclass
class ModelGeometry:
    """The elements of one model, in its IFC world frame (metres, Z up). Element i: guids[i], types[i] (IFC class),
    origins[i] (float64), bounds[i] (min x y z, max x y z, float64), vertices[i] (float32 (n, 3), relative to its
    origin), faces[i] (int32 (m, 3))."""

    guids: list[str]
    types: list[str]
    origins: np.ndarray
    bounds: np.ndarray
    vertices: "_Slices | list[np.ndarray]"
    faces: "_Slices | list[np.ndarray]"
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self):
        if not self.index:
            self.index = {guid: i for i, guid in enumerate(self.guids)}

    def __len__(self) -> int:
        return len(self.guids)

    def world_vertices(self, i: int) -> np.ndarray:
        """Element i's vertices in the model's world frame, float64."""
        return self.origins[i] + self.vertices[i].astype(np.float64)


class _Slices:
    """Element i's rows of one kind (vertices or triangles) as a view into the file's buffer, made when asked."""

    def __init__(self, words: np.ndarray, starts: np.ndarray, counts: np.ndarray):
        self.words, self.starts, self.counts = words, starts, counts

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i: int) -> np.ndarray:
        start = self.starts[i]
        return self.words[start:start + 3 * self.counts[i]].reshape(-1, 3)


def load(path: Path | str) -> ModelGeometry:
    """The elements of a clash-geometry.bin (GeometryError when it is not one or is cut short): one pass over the
    records' headers; the numbers stay in the file's buffer (every record starts at a multiple of 8 bytes, so
    whole-buffer views of float64, float32 and int32 words reach them)."""
    data = Path(path).read_bytes()
    if data[:len(MAGIC)] != MAGIC:
        raise GeometryError(f"{path}: not clash geometry")
    guids, types, places, vertex_counts, face_counts = [], [], [], [], []
    offset, size = len(MAGIC), len(data)
    header, unpack = HEADER.size, HEADER.unpack_from
    try:
        while True:
            tag = data[offset]
            if tag == END:
                (_, count) = END_RECORD.unpack_from(data, offset)
                if count != len(guids):
                    raise GeometryError(f"{path}: {len(guids)} elements, the end record says {count}")
                break
            if tag != ELEMENT:
                raise GeometryError(f"{path}: unknown record {tag} at byte {offset}")
            _, kind_length, guid_length, vertex_count, face_count = unpack(data, offset)
            start = offset + header
            guids.append(data[start:start + guid_length].decode("utf-8"))
            types.append(data[start + guid_length:start + guid_length + kind_length].decode("ascii"))
            start += guid_length + kind_length
            start += padding(start)
            places.append(start)
            vertex_counts.append(vertex_count)
            face_counts.append(face_count)
            start += PLACE.size + 12 * vertex_count + 12 * face_count
            offset = start + padding(start)
            if offset > size:
                raise GeometryError(f"{path}: cut short")
    except (IndexError, struct.error, ValueError) as exc:
        if isinstance(exc, GeometryError):
            raise
        raise GeometryError(f"{path}: cut short ({exc})") from None
    buffer = np.frombuffer(data, np.uint8)
    usable = len(data) // 8 * 8
    doubles = buffer[:usable].view("<f8")
    singles, integers = buffer[:usable].view("<f4"), buffer[:usable].view("<i4")
    place_at = np.array(places, dtype=np.int64)
    place = doubles[(place_at // 8)[:, None] + np.arange(PLACE_DOUBLES)] if len(places) else np.zeros((0, PLACE_DOUBLES))
    vertex_counts, face_counts = np.array(vertex_counts, dtype=np.int64), np.array(face_counts, dtype=np.int64)
    vertex_at = (place_at + PLACE.size) // 4
    return ModelGeometry(guids, types, place[:, :3], place[:, 3:], _Slices(singles, vertex_at, vertex_counts),
                         _Slices(integers, vertex_at + 3 * vertex_counts, face_counts))


def build_clash_geometry(ifc_path: Path | str, out_path: Path | str, on_progress=lambda fraction: None, *,
                         should_stop=lambda: False, threads: int = 1, memory_mb: int = 0) -> int:
    """Meshes the IFC at ifc_path into out_path (clash-geometry.bin, moved into place when complete) in a child
    process running the conversion's meshing (its address space capped at memory_mb, 0: no cap; no sandbox: the
    tests' and the benchmark's own IFCs only); returns how many elements it holds. Raises Cancelled when
    should_stop() turns true (the child is killed), RuntimeError when it fails."""
    command = [sys.executable, "-m", WRITER_MODULE, str(ifc_path), str(out_path), "--threads", str(threads), "--memory-mb", str(memory_mb)]
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    errors = tempfile.TemporaryFile("w+")  # a file, not a pipe: ifcopenshell's warnings can never block the child
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, env=env)
    count = None
    try:
        pending = b""
        while True:
            if should_stop():
                raise Cancelled("the meshing was cancelled")
            ready, _, _ = select.select([child.stdout], [], [], POLL_SECONDS)
            chunk = os.read(child.stdout.fileno(), 1 << 16) if ready else b""
            if chunk:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    if "progress" in message:
                        on_progress(float(message["progress"]))
                    count = message.get("elements", count)
            elif ready or child.poll() is not None:  # end of output
                child.wait()
                break
        if child.returncode != 0 or count is None:
            errors.seek(0)
            raise RuntimeError(f"meshing {ifc_path} failed: {errors.read()[-2000:]}")
        return int(count)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        errors.close()
