"""Geometry of an IFC as a stream of records for the XKT stage (converter/convert.js), written while ifcopenshell's
multi-threaded iterator produces the shapes, so nothing holds the whole model's geometry (ifcopenshell's glTF
serializer kept every mesh in memory until its end: ~190 MB for a 30 MB IFC).

The records carry what the glTF serializer put into its GLB, the same way xeokit-convert's glTF parser read it:
one mesh per element (node name = GlobalId = XKT entity id), decomposed into one primitive per run of faces with
the same material (its own vertex range, indices rebased), the Y-up node matrix, materials as base colour, opacity
(1 - transparency), metallic 0 and roughness from the specular exponent, a mesh shared by elements whose geometry id
is the same (XKT geometry reuse), elements without material ids skipped. Elements with openings get their body less
their openings from openings.cut (a primitive per material of the body's shells, no normals: xeokit-convert then
merges the vertices the cut's faces repeat and the viewer shades them flat), or, where it refuses, ifcopenshell's
own mesh with the openings subtracted.

Format (little-endian) after the 8-byte magic: a sequence of records, each starting with one tag byte
  1 material  u32 id, f64 r g b opacity metallic roughness (doubles, as the GLB's JSON carried them)
  2 geometry  u32 id, u8 primitive (4 triangles, 1 lines), u32 n + f32[n] positions, u32 n + f32[n] normals,
              u32 n + u32[n] indices
  3 entity    u16 n + utf-8[n] id, f64[16] matrix (column-major), u32 n, n x (u32 geometry id, i32 material id or -1)
  0 end       u32 number of entity records

Beside the records, each element's axis-aligned bounds in IFC world coordinates (metres, Z up) go to
element-bounds.json as {GlobalId: [min x, y, z, max x, y, z]} (mm precision), streamed the same way: the BCF export
aims a camera at an issue's element with them when the issue has none. And, when asked, each element's triangles in
IFC world coordinates go to clash-geometry.bin (clash_geometry.py) for the clash engine, the same mesh as the XKT's.
"""

from __future__ import annotations

import logging
import struct
import time
from collections import Counter

import numpy as np

from models_app.conversion import openings
from models_app.conversion.clash_geometry import ClashGeometryWriter, placed
from models_app.conversion.metadata import StreamedObject
from models_app.conversion.openings import EMPTY, Mesh
from models_app.conversion.voids import modelling_precision, subtractions

log = logging.getLogger(__name__)

MAGIC = b"XKTGEO01"
MATERIAL, GEOMETRY, ENTITY, END = 1, 2, 3, 0
TRIANGLES, LINES = 4, 1
NO_MATERIAL = -1
# The fast simple CGAL kernel, with OpenCascade for the elements it fails on (typically walls with openings).
HYBRID_KERNELS = ("cgal-simple", "opencascade")
PROGRESS_SECONDS = 0.5
BOUNDS_DECIMALS = 3


def _y_up(transformation_buffer: bytes) -> np.ndarray:
    """The glTF serializer's node matrix: the shape's placement with IFC's Z-up turned into glTF's Y-up."""
    m = np.frombuffer(transformation_buffer, "d").reshape((4, 4), order="F")
    return np.array([m[0], m[2], -m[1], m[3]]).T.reshape(16)  # column-major, rows x, z, -y, w


_CORNERS = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=bool)  # which of low/high
_IDENTITY = np.eye(4).tobytes()


def _world_bounds(transformation_buffer: bytes, local: tuple[list[float], list[float]]) -> list[float]:
    """The world bounds of the shape: its placement applied to the 8 corners of its geometry's own bounds (with
    use-world-coords the placement is the identity and the geometry's bounds are the world's)."""
    low, high = local
    if transformation_buffer != _IDENTITY:
        m = np.frombuffer(transformation_buffer, "d").reshape((4, 4), order="F")
        world = np.where(_CORNERS, high, low) @ m[:3, :3].T + m[:3, 3]
        low, high = world.min(axis=0).tolist(), world.max(axis=0).tolist()
    return [round(value, BOUNDS_DECIMALS) for value in (*low, *high)]


class _NoRecords:
    """Where the XKT records go when only the clash geometry is wanted (build_clash_geometry)."""

    def write(self, data: bytes) -> None:
        pass


class _RecordWriter:
    def __init__(self, handle, bounds: StreamedObject | None = None, clash: ClashGeometryWriter | None = None):
        self.handle, self.bounds, self.clash = handle, bounds, clash
        self.materials: dict[str, int] = {}
        self.meshes: dict[str, list[tuple[int, int]]] = {}  # geometry id -> [(geometry record id, material id)]
        self.geometry_count = 0
        self.entity_count = 0
        handle.write(MAGIC)

    def material(self, style) -> int:
        known = self.materials.get(style.name)
        if known is not None:
            return known
        index = self.materials[style.name] = len(self.materials)
        colour = style.get_color()
        red, green, blue = colour.components if colour is not None else (1.0, 1.0, 1.0)
        transparency = style.transparency
        opacity = 1.0 - transparency if transparency == transparency else 1.0  # NaN: not set
        roughness = (1.0 / style.specularity if style.specularity > 1.0 else 1.0) if style.has_specularity() else 1.0
        self.handle.write(struct.pack("<BI6d", MATERIAL, index, red, green, blue, opacity, 0.0, roughness))
        return index

    def _geometry(self, primitive: int, positions: np.ndarray, normals: np.ndarray, indices: np.ndarray) -> int:
        index = self.geometry_count
        self.geometry_count += 1
        write = self.handle.write
        write(struct.pack("<BIBI", GEOMETRY, index, primitive, positions.size))
        write(positions.astype("<f4").tobytes())
        write(struct.pack("<I", normals.size))
        write(normals.astype("<f4").tobytes())
        write(struct.pack("<I", indices.size))
        write(indices.astype("<u4").tobytes())
        return index

    def _mesh(self, geometry) -> list[tuple[int, int]]:
        known = self.meshes.get(geometry.id)
        if known is None:
            faces = np.frombuffer(geometry.faces_buffer, "<i4")
            primitive = TRIANGLES if faces.size else LINES
            known = self.meshes[geometry.id] = self._primitives(
                primitive, np.frombuffer(geometry.verts_buffer, "<f8"), np.frombuffer(geometry.normals_buffer, "<f8"),
                faces if faces.size else np.frombuffer(geometry.edges_buffer, "<i4"),
                np.frombuffer(geometry.material_ids_buffer, "<i4"), geometry.materials)
        return known

    def _primitives(self, primitive: int, verts, normals, faces, material_ids, styles) -> list[tuple[int, int]]:
        """One primitive per run of equal material ids, with just the vertices its faces use (as the serializer)."""
        stride = 3 if primitive == TRIANGLES else 2
        starts = [0, *(np.flatnonzero(material_ids[1:] != material_ids[:-1]) + 1).tolist(), material_ids.size]
        mesh = []
        for start, end in zip(starts, starts[1:]):
            indices = faces[start * stride:end * stride]
            first, last = int(indices.min()), int(indices.max()) + 1
            style_index = int(material_ids[start])
            material = self.material(styles[style_index]) if style_index >= 0 else NO_MATERIAL
            record = self._geometry(primitive, verts[first * 3:last * 3], normals[first * 3:last * 3] if normals.size else normals, indices - first)
            mesh.append((record, material))
        return mesh

    def entity(self, shape) -> None:
        geometry = shape.geometry
        if not len(geometry.material_ids_buffer):
            return  # the serializer skips these too
        verts = np.frombuffer(geometry.verts_buffer, "<f8").reshape(-1, 3)
        self._bounds(shape, verts)  # not kept: one box per element is cheap
        if self.clash is not None:
            self.clash.element(shape.guid, shape.type, placed(shape.transformation_buffer, verts), np.frombuffer(geometry.faces_buffer, "<i4"))
        self._entity(shape.guid, shape.transformation_buffer, self._mesh(geometry))

    def cut_entity(self, shape, mesh: Mesh) -> None:
        """The element of shape (its body, meshed without openings) with `mesh`, its body less its openings."""
        self._bounds(shape, mesh.vertices)
        if self.clash is not None:
            self.clash.element(shape.guid, shape.type, placed(shape.transformation_buffer, mesh.vertices), mesh.faces)
        self._entity(shape.guid, shape.transformation_buffer, self._primitives(
            TRIANGLES, mesh.vertices.reshape(-1), np.zeros(0), mesh.faces.reshape(-1), mesh.material_ids, shape.geometry.materials))

    def _bounds(self, shape, verts: np.ndarray) -> None:
        if self.bounds is not None:
            self.bounds.member(shape.guid, _world_bounds(shape.transformation_buffer, (verts.min(axis=0).tolist(), verts.max(axis=0).tolist())))

    def _entity(self, guid: str, transformation_buffer: bytes, mesh: list[tuple[int, int]]) -> None:
        name = guid.encode("utf-8")
        self.handle.write(struct.pack("<BH", ENTITY, len(name)) + name + _y_up(transformation_buffer).astype("<f8").tobytes()
                          + struct.pack("<I", len(mesh)) + b"".join(struct.pack("<Ii", g, m) for g, m in mesh))
        self.entity_count += 1

    def end(self) -> None:
        self.handle.write(struct.pack("<BI", END, self.entity_count))
        if self.bounds is not None:
            self.bounds.end()
        if self.clash is not None:
            self.clash.end()


def _settings(**extra):
    import ifcopenshell.geom

    settings = ifcopenshell.geom.settings()
    for name, value in {"use-world-coords": True, "use-element-guids": True, "apply-default-materials": True, **extra}.items():
        settings.set(name, value)
    return settings


def _shapes(ifc, settings, library: str, threads: int, on_progress, **selection):
    """The iterator's shapes one by one (selection: include= or exclude= products), reporting its progress."""
    import ifcopenshell.geom

    iterator = ifcopenshell.geom.iterator(settings, ifc, threads, geometry_library=library, **selection)
    last_report = time.monotonic()
    if iterator.initialize():
        while True:
            yield iterator.get()
            if time.monotonic() - last_report > PROGRESS_SECONDS:
                on_progress(iterator.progress() / 100)
                last_report = time.monotonic()
            if not iterator.next():
                break


class _OpeningMeshes:
    """The mesh of every opening, made before the bodies (as the iterator would for each element again), each kept
    until the last element it is subtracted from has been cut."""

    def __init__(self, subtracted: dict[int, list]):
        self.uses = Counter(opening.id() for found in subtracted.values() for opening in found)
        self.meshes: dict[int, Mesh] = {}

    def make(self, ifc, library: str, threads: int, on_progress) -> None:
        if self.uses:
            included = [ifc.by_id(opening) for opening in self.uses]
            self.meshes = {shape.id: Mesh.of_geometry(shape.geometry)
                           for shape in _shapes(ifc, _settings(), library, threads, on_progress, include=included)}

    def take(self, found: list) -> list[Mesh]:
        meshes = [self.meshes.get(opening.id(), EMPTY) for opening in found]
        for opening in found:
            self.uses[opening.id()] -= 1
            if not self.uses[opening.id()]:
                self.meshes.pop(opening.id(), None)
        return meshes


def _body_less_openings(shape, opening_meshes: list[Mesh], precision: float) -> Mesh | None:
    """openings.cut, with any failure of its own taken as a refusal (the element then goes to OpenCascade)."""
    try:
        with np.errstate(all="ignore"):
            return openings.cut(Mesh.of_geometry(shape.geometry), opening_meshes, precision)
    except Exception:
        log.warning("mesh subtraction of the openings of %s failed; OpenCascade subtracts them", shape.guid, exc_info=True)
        return None


def write_geometry(ifc, handle, threads: int, on_progress=lambda fraction: None, bounds_handle=None, clash_handle=None) -> int:
    """Writes the records of every element with geometry (openings excluded) to handle (None: none), their bounds to
    bounds_handle (a text file) and their triangles to clash_handle (binary, clash_geometry.py) when given; returns
    how many were written. Openings are meshed first and subtracted from the bodies of their elements with
    openings.cut; an element it refuses is meshed by ifcopenshell with its openings."""
    import ifcopenshell.geom

    hybrid_available = all(ifcopenshell.geom.has_geometry_library(kernel) for kernel in HYBRID_KERNELS)
    library = "hybrid-" + "-".join(HYBRID_KERNELS) if hybrid_available else "opencascade"
    writer = _RecordWriter(_NoRecords() if handle is None else handle, StreamedObject(bounds_handle) if bounds_handle is not None else None,
                           ClashGeometryWriter(clash_handle) if clash_handle is not None else None)
    subtracted = subtractions(ifc)
    precision = modelling_precision(ifc)
    opening_meshes = _OpeningMeshes(subtracted)
    opening_share = len(opening_meshes.uses) / max(1, len(ifc.by_type("IfcProduct")))
    opening_meshes.make(ifc, library, threads, lambda fraction: on_progress(opening_share * fraction))
    with_openings = _settings()
    for shape in _shapes(ifc, _settings(**{"disable-opening-subtractions": True}), library, threads,
                         lambda fraction: on_progress(opening_share + (1 - opening_share) * fraction),
                         exclude=ifc.by_type("IfcOpeningElement")):
        found = subtracted.get(shape.id)
        if found is None:
            writer.entity(shape)
            continue
        result = _body_less_openings(shape, opening_meshes.take(found), precision)
        if result is not None:
            writer.cut_entity(shape, result)
            continue
        try:
            writer.entity(ifcopenshell.geom.create_shape(with_openings, ifc.by_id(shape.id), geometry_library=library))
        except RuntimeError:  # what the iterator does when the booleans fail: the body without its openings
            writer.entity(shape)
    writer.end()
    return writer.entity_count
