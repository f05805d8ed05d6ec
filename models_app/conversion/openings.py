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
- the result is a non-empty closed solid with no film: no two coplanar faces facing opposite ways, which is what a
  boolean leaves where a face of an opening lies (within rounding) on a face of the body.
Openings are grown by the modelling precision first (each face moved out by it), so an opening flush with a
face of the wall (the usual case: an opening exactly as deep as the wall) cuts through it instead of leaving a
film, as OpenCascade's fuzzy booleans do within the same precision.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PRECISION = 1e-5  # metres: ifcopenshell's modelling precision, how far openings are grown
PLANE_DECIMALS = 6  # faces closer than this (normal components, offset in metres) count as one plane


@dataclass(frozen=True)
class Mesh:
    """Triangles in world coordinates: vertices (n, 3) float64, faces (m, 3) int, a material index per face."""

    vertices: np.ndarray
    faces: np.ndarray
    material_ids: np.ndarray

    @classmethod
    def of_geometry(cls, geometry) -> "Mesh":
        return cls(np.frombuffer(geometry.verts_buffer, "<f8").reshape(-1, 3),
                   np.frombuffer(geometry.faces_buffer, "<i4").reshape(-1, 3),
                   np.frombuffer(geometry.material_ids_buffer, "<i4"))


EMPTY = Mesh(np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64), np.zeros(0, dtype=np.int32))


def openings_of(product) -> list:
    """The openings ifcopenshell subtracts from a product: its own, and those of every element it is an aggregated
    part of (walking up single IfcRelAggregates), e.g. a wall's openings for its layer parts."""
    found = []
    if product.is_a("IfcElement") and not product.is_a("IfcFeatureElementSubtraction"):
        found += [rel.RelatedOpeningElement for rel in product.HasOpenings]
    whole = product
    while True:
        decomposes = [rel for rel in (getattr(whole, "Decomposes", None) or ()) if rel.is_a("IfcRelAggregates")]
        if len(decomposes) != 1:
            return found
        whole = decomposes[0].RelatingObject
        if whole.is_a("IfcElement") and not whole.is_a("IfcFeatureElementSubtraction"):
            found += [rel.RelatedOpeningElement for rel in whole.HasOpenings]


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
    if not np.isfinite(points).all():
        return None
    if grow:
        points = _grown(points, triangles, grow)
    solid = manifold3d.Manifold(manifold3d.Mesh64(vert_properties=points, tri_verts=triangles.astype(np.uint64)))
    if solid.status() != manifold3d.Error.NoError or solid.volume() <= 0:
        return None
    return solid


def subtractions(ifc) -> dict[int, list]:
    """Product id -> the openings ifcopenshell subtracts from it (see openings_of), for each product that has any:
    found from the voiding relations down through aggregation, without visiting every product."""
    candidates = {}
    pending = [rel.RelatingBuildingElement for rel in ifc.by_type("IfcRelVoidsElement")]
    while pending:
        product = pending.pop()
        if product.id() not in candidates:
            candidates[product.id()] = product
            pending += [part for rel in product.IsDecomposedBy if rel.is_a("IfcRelAggregates") for part in rel.RelatedObjects]
    return {key: openings for key, product in candidates.items() if (openings := openings_of(product))}


def _has_film(corners: np.ndarray) -> bool:
    """Whether two faces of the triangles (m, 3, 3) lie in one plane facing opposite ways."""
    normals, lengths = _unit_normals(corners)
    kept = lengths > 1e-14
    normals = normals[kept]
    offsets = np.einsum("ij,ij->i", normals, corners[kept, 0])
    # one key per plane, whichever way its faces point: the sign makes the first clear normal component positive;
    # keys on two grids half a step apart, so that two faces of one plane never fall on two sides of a rounding step
    first = np.argmax(np.abs(normals) > 1e-9, axis=1)
    facing = np.sign(normals[np.arange(len(normals)), first])
    plane = np.c_[normals * facing[:, None], offsets * facing]
    step = 10.0 ** -PLANE_DECIMALS
    return any(_faced_both_ways(np.round(plane + shift, PLANE_DECIMALS), facing > 0) for shift in (0.0, step / 2))


def _faced_both_ways(keys: np.ndarray, positive: np.ndarray) -> bool:
    planes, plane_of_face = np.unique(keys, axis=0, return_inverse=True)
    faced = np.zeros((len(planes), 2), dtype=bool)
    faced[plane_of_face.reshape(-1), positive.astype(int)] = True
    return bool(faced.all(axis=1).any())


def cut(body: Mesh, openings: list[Mesh]) -> Mesh | None:
    """The body less the openings, its faces each with their own three vertices; None when the result cannot be
    vouched for (see the module's description)."""
    import manifold3d

    if not body.faces.size or not openings or not all(opening.faces.size for opening in openings):
        return None
    grown = [_solid(opening.vertices, opening.faces[shell], PRECISION) for opening in openings for shell in _shells(opening.faces)]
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
        if _has_film(triangles):
            return None
        corners.append(triangles)
        materials.append(np.full(len(triangles), material[0], dtype=np.int32))
    vertices = np.concatenate(corners).reshape(-1, 3)
    return Mesh(vertices, np.arange(len(vertices)).reshape(-1, 3), np.concatenate(materials))


def flat_normals(mesh: Mesh) -> np.ndarray:
    """A normal per vertex of a mesh whose faces each have their own three vertices (as cut returns)."""
    return np.repeat(_unit_normals(mesh.vertices[mesh.faces])[0], 3, axis=0)
