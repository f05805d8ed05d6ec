"""The meshes a clash run works on: a model's clash-geometry.bin, which its conversion wrote while it meshed the
elements (models_app/conversion/clash_geometry.py describes the format and writes it), read here without Django.

`load(path)` reads the whole file once and keeps it as one buffer: each element's vertices and triangles are views
into it (no copy), so a loaded model costs the file's size and a few small arrays.
`build_clash_geometry(ifc_path, out_path, on_progress)` meshes an IFC that is not converted (the agent's staged
product) in a child process (the conversion's own meshing; ifcopenshell's memory stays there).
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

# The format (see models_app/conversion/clash_geometry.py, which writes it)
MAGIC = b"CLASHG01"
ELEMENT, END = 1, 0
HEADER = struct.Struct("<BBHII")  # tag, class length, GlobalId length, vertex count, triangle count
END_RECORD = struct.Struct("<B3xI")
PLACE_DOUBLES = 9  # origin, bounds
ALIGN = 8
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
    vertices: list[np.ndarray]
    faces: list[np.ndarray]
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self):
        if not self.index:
            self.index = {guid: i for i, guid in enumerate(self.guids)}

    def __len__(self) -> int:
        return len(self.guids)

    def world_vertices(self, i: int) -> np.ndarray:
        """Element i's vertices in the model's world frame, float64."""
        return self.origins[i] + self.vertices[i].astype(np.float64)


def _pad(size: int) -> int:
    return -size % ALIGN


def load(path: Path | str) -> ModelGeometry:
    """The elements of a clash-geometry.bin (GeometryError when it is not one or is cut short)."""
    data = Path(path).read_bytes()
    if data[:len(MAGIC)] != MAGIC:
        raise GeometryError(f"{path}: not clash geometry")
    guids, types, places, vertices, faces = [], [], [], [], []
    offset, size = len(MAGIC), len(data)
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
            _, kind_length, guid_length, vertex_count, face_count = HEADER.unpack_from(data, offset)
            start = offset + HEADER.size
            guids.append(data[start:start + guid_length].decode("utf-8"))
            start += guid_length
            types.append(data[start:start + kind_length].decode("ascii"))
            start += kind_length
            start += _pad(start)
            places.append(np.frombuffer(data, "<f8", PLACE_DOUBLES, start))
            start += 8 * PLACE_DOUBLES
            vertices.append(np.frombuffer(data, "<f4", 3 * vertex_count, start).reshape(-1, 3))
            start += 12 * vertex_count
            faces.append(np.frombuffer(data, "<i4", 3 * face_count, start).reshape(-1, 3))
            start += 12 * face_count
            offset = start + _pad(start)
            if offset > size:
                raise GeometryError(f"{path}: cut short")
    except (IndexError, struct.error, ValueError) as exc:
        if isinstance(exc, GeometryError):
            raise
        raise GeometryError(f"{path}: cut short ({exc})") from None
    place = np.array(places).reshape(-1, PLACE_DOUBLES)
    return ModelGeometry(guids, types, place[:, :3], place[:, 3:], vertices, faces)


def build_clash_geometry(ifc_path: Path | str, out_path: Path | str, on_progress=lambda fraction: None, *,
                         should_stop=lambda: False, threads: int = 1, memory_mb: int = 0) -> int:
    """Meshes the IFC at ifc_path into out_path (clash-geometry.bin, moved into place when complete) in a child
    process running the conversion's meshing (its address space capped at memory_mb, 0: no cap; not the
    conversion's sandbox: for IFCs this service made, such as the agent's staged product); returns how many elements
    it holds. Raises Cancelled when should_stop() turns true (the child is killed), RuntimeError when it fails."""
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
