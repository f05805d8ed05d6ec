"""Opening subtraction on meshes (manifold3d) instead of OpenCascade's solid booleans.

OpenCascade takes most of a conversion's geometry time on some walls: on AC20-FZK-Haus two gable walls, clipped by
the roof and cut by two 128-sided round openings, take ~0.8 s each. So ifcopenshell meshes an element's body
without its openings and each opening on its own (both as fast as any other shape), and the openings are
subtracted here with manifold3d, whose mesh booleans are exact and guarantee a closed result.

A mesh result stands only where it can be vouched for; otherwise `cut` answers None and the element is meshed by
ifcopenshell with its openings as before:
- every shell of the body and of each opening (ifcopenshell emits one per representation item, each with its own
  vertices) must weld into a closed, consistently oriented solid of positive volume;
- each shell of the body has one material (the cut faces take it, as OpenCascade gives them the body's style);
- the result is a non-empty closed solid with no film: no two parallel faces facing opposite ways closer than the
  growth distance (below), which is what a boolean leaves where a face of an opening lies just inside a face of
  the body;
- the model's precision is no coarser than MAX_PRECISION, and every coordinate is finite and within MAX_EXTENT of
  the body's centre (the solids are built around that centre, so a model placed a thousand kilometres from its
  origin is cut as exactly as one at the origin).
Openings are grown first (each face moved out) by the model's precision (voids.modelling_precision), but at least
by MIN_GROWTH: an opening flush with a face of the wall (the usual case: an opening exactly as deep as the wall)
then cuts through it instead of leaving a film, as OpenCascade's fuzzy booleans do within the same precision.
manifold3d is imported where it is used (3 ms): its 2 MB stay out of the conversion zygote.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_GROWTH = 1e-5  # metres an opening is grown by at least
MAX_PRECISION = 1e-3  # metres: a model that claims no better is left to OpenCascade
MAX_EXTENT = 1e4  # metres from the body's centre
NORMAL_STEP = 1e-6  # faces whose normals differ by less than this (in each component) count as parallel


@dataclass(frozen=True)
class Mesh:
    """Triangles in world coordinates: vertices (n, 3) float64, faces (m, 3) int, a material index per face."""

    vertices: np.ndarray
    faces: np.ndarray
    material_ids: np.ndarray

    def moved(self, offset: np.ndarray) -> "Mesh":
        return Mesh(self.vertices + offset, self.faces, self.material_ids)

    @classmethod
    def of_geometry(cls, geometry) -> "Mesh":
        return cls(np.frombuffer(geometry.verts_buffer, "<f8").reshape(-1, 3),
                   np.frombuffer(geometry.faces_buffer, "<i4").reshape(-1, 3),
                   np.frombuffer(geometry.material_ids_buffer, "<i4"))


EMPTY = Mesh(np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64), np.zeros(0, dtype=np.int32))


def _roots(first: np.ndarray, second: np.ndarray, count: int) -> np.ndarray:
    """A representative per point of the graph with edges first[i]-second[i], the same for exactly the points of one
    connected part: FastSV's hooking and shortcutting (Zhang, Azad, Hu 2020), O(log n) rounds of array operations."""
    parent = grand = np.arange(count)
    while True:
        hooked = parent.copy()
        np.minimum.at(hooked, parent[first], grand[second])
        np.minimum.at(hooked, parent[second], grand[first])
        np.minimum.at(hooked, first, grand[second])
        np.minimum.at(hooked, second, grand[first])
        hooked = np.minimum(hooked, grand)
        if np.array_equal(hooked[hooked], grand):
            return grand
        parent, grand = hooked, hooked[hooked]


def _shells(faces: np.ndarray) -> list[np.ndarray]:
    """The faces of each connected shell (faces that share vertex indices), as index arrays into faces."""
    root = _roots(np.r_[faces[:, 0], faces[:, 1]], np.r_[faces[:, 1], faces[:, 2]], int(faces.max()) + 1)
    shell_of_face = root[faces[:, 0]]
    order = np.argsort(shell_of_face, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(shell_of_face[order])) + 1)


def _unit_normals(corners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The unit normal of each triangle (m, 3, 3) and twice its area."""
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    lengths = np.linalg.norm(normals, axis=1)
    return normals / np.maximum(lengths, 1e-300)[:, None], lengths


def _grown(points: np.ndarray, triangles: np.ndarray, distance: float) -> np.ndarray:
    """The points moved so that every plane through a point moves out by distance: per point, the least-norm
    displacement d with n . d = distance for each distinct face normal n there (a box grows into a box, a prism
    into a prism, each face staying flat)."""
    normals, lengths = _unit_normals(points[triangles])
    kept = lengths > 1e-14
    pairs = np.unique(np.c_[triangles[kept].reshape(-1, 1),
                            np.round(np.repeat(normals[kept], 3, axis=0), 9)], axis=0)
    point, normal = pairs[:, 0].astype(np.int64), pairs[:, 1:]
    gram, total = np.zeros((len(points), 3, 3)), np.zeros((len(points), 3))
    np.add.at(gram, point, normal[:, :, None] * normal[:, None, :])
    np.add.at(total, point, normal)
    return points + distance * np.einsum("pij,pj->pi", np.linalg.pinv(gram, rcond=1e-9), total)


def _solid(vertices: np.ndarray, faces: np.ndarray, grow: float = 0.0):
    """The shell as a manifold3d solid (vertices at the same position welded), grown by `grow` (see _grown); None
    when it is not a closed solid of positive volume with finite coordinates."""
    import manifold3d

    points, welded = np.unique(vertices[faces.reshape(-1)], axis=0, return_inverse=True)
    triangles = welded.reshape(-1, 3)
    if not (np.abs(points) <= MAX_EXTENT).all():  # NaN fails this too
        return None
    if grow:
        points = _grown(points, triangles, grow)
    solid = manifold3d.Manifold(manifold3d.Mesh64(vert_properties=points, tri_verts=triangles.astype(np.uint64)))
    if solid.status() != manifold3d.Error.NoError or solid.volume() <= 0:
        return None
    return solid


def _has_film(corners: np.ndarray, distance: float) -> bool:
    """Whether two faces of the triangles (m, 3, 3) face opposite ways on parallel planes less than about
    `distance` apart (always when closer than distance / 2)."""
    normals, lengths = _unit_normals(corners)
    kept = lengths > 1e-14
    normals = normals[kept]
    offsets = np.einsum("ij,ij->i", normals, corners[kept, 0])
    # one key per plane, whichever way its faces point: the sign makes the first clear normal component positive;
    # keys on two grids half a step apart, so that two faces of one plane never fall on two sides of a rounding step
    first = np.argmax(np.abs(normals) > 1e-9, axis=1)
    facing = np.sign(normals[np.arange(len(normals)), first])
    plane = np.c_[normals * facing[:, None] / NORMAL_STEP, offsets * facing / distance]
    return any(_faced_both_ways(np.round(plane + shift), facing > 0) for shift in (0.0, 0.5))


def _faced_both_ways(keys: np.ndarray, positive: np.ndarray) -> bool:
    planes, plane_of_face = np.unique(keys, axis=0, return_inverse=True)
    faced = np.zeros((len(planes), 2), dtype=bool)
    faced[plane_of_face.reshape(-1), positive.astype(int)] = True
    return bool(faced.all(axis=1).any())


def _overlap(body: Mesh, opening: Mesh, growth: float) -> bool:
    """Whether the bounding boxes of the body and of the opening grown by `growth` overlap."""
    return bool((opening.vertices.max(axis=0) + growth >= body.vertices.min(axis=0)).all()
                and (opening.vertices.min(axis=0) - growth <= body.vertices.max(axis=0)).all())


def cut(body: Mesh, openings: list[Mesh], precision: float) -> Mesh | None:
    """The body less the openings (the faces of a cut each with their own three vertices; the body itself where no
    opening reaches it); None when the result cannot be vouched for (see the module's description). `precision`: the
    model's, in metres."""
    import manifold3d

    if not body.faces.size or len(body.material_ids) != len(body.faces) or not precision <= MAX_PRECISION:
        return None
    if not openings or not all(opening.faces.size for opening in openings):
        return None
    centre = (body.vertices.min(axis=0) + body.vertices.max(axis=0)) / 2
    if not np.isfinite(centre).all():
        return None
    growth = max(MIN_GROWTH, precision)
    if not all(np.isfinite(opening.vertices).all() for opening in openings):
        return None
    openings = [opening for opening in openings if _overlap(body, opening, growth)]
    body, openings = body.moved(-centre), [opening.moved(-centre) for opening in openings]
    if not openings:  # e.g. a part of an aggregate none of its whole's openings reach: the body, if it is closed
        closed = all(_solid(body.vertices, body.faces[shell]) is not None for shell in _shells(body.faces))
        return body.moved(centre) if closed else None
    grown = [_solid(opening.vertices, opening.faces[shell], growth) for opening in openings for shell in _shells(opening.faces)]
    if any(solid is None for solid in grown):
        return None
    cutter = manifold3d.Manifold.batch_boolean(grown, manifold3d.OpType.Add)
    corners, materials = [], []
    for shell in _shells(body.faces):
        material = body.material_ids[shell]
        solid = _solid(body.vertices, body.faces[shell])
        if solid is None or (material != material[0]).any():
            return None
        result = solid - cutter
        if result.is_empty() or result.status() != manifold3d.Error.NoError:
            return None
        mesh = result.to_mesh64()
        triangles = np.asarray(mesh.vert_properties)[:, :3][np.asarray(mesh.tri_verts).astype(np.int64)]
        if _has_film(triangles, growth):
            return None
        corners.append(triangles)
        materials.append(np.full(len(triangles), material[0], dtype=np.int32))
    vertices = np.concatenate(corners).reshape(-1, 3)
    return Mesh(vertices, np.arange(len(vertices)).reshape(-1, 3), np.concatenate(materials)).moved(centre)
