"""clash-geometry.bin: the triangle mesh of every element, kept at conversion for the clash engine
(coordination_app.engine.geometry reads it), so a clash run never meshes the model again.

Written element by element while the conversion meshes them (nothing holds the whole model's geometry), in the
model's own IFC world frame (metres, Z up), openings subtracted as in the XKT. Each element's vertices are stored as
float32 offsets from a float64 origin (the centre of its bounds), so a georeferenced model a thousand kilometres
from its origin keeps sub-millimetre precision.

The format: models_app.clash_geometry_format. Elements without triangles (lines only) are left out.
"""

from __future__ import annotations

import numpy as np

from models_app.clash_geometry_format import ELEMENT, END, END_RECORD, HEADER, MAGIC, PLACE, padding


class ClashGeometryWriter:
    """Streams element records to a binary handle."""

    def __init__(self, handle):
        self.handle, self.count = handle, 0
        handle.write(MAGIC)

    def element(self, guid: str, ifc_class: str, vertices: np.ndarray, faces: np.ndarray) -> None:
        """One element: world vertices (n, 3) float64 and triangles (m, 3) of vertex indices."""
        faces = np.asarray(faces).reshape(-1, 3)
        if not len(faces):
            return
        vertices = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
        low, high = vertices.min(axis=0), vertices.max(axis=0)
        origin = (low + high) / 2
        name, kind = guid.encode("utf-8"), ifc_class.encode("ascii", "replace")
        head = HEADER.pack(ELEMENT, len(kind), len(name), len(vertices), len(faces)) + name + kind
        body = (PLACE.pack(*origin, *low, *high) + (vertices - origin).astype("<f4").tobytes()
                + faces.astype("<i4").tobytes())
        self.handle.write(head + bytes(padding(len(head))) + body + bytes(padding(len(body))))
        self.count += 1

    def end(self) -> None:
        self.handle.write(END_RECORD.pack(END, self.count))


def placed(transformation_buffer: bytes, vertices: np.ndarray) -> np.ndarray:
    """The vertices with the shape's placement applied (the identity with use-world-coords, the usual case)."""
    matrix = np.frombuffer(transformation_buffer, "d").reshape((4, 4), order="F")
    if np.array_equal(matrix, np.eye(4)):
        return vertices
    return vertices @ matrix[:3, :3].T + matrix[:3, 3]

