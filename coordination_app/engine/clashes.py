"""find_clashes: which elements of set A collide with which of set B (or of A itself), on the meshes the conversion
kept (clash-geometry.bin), in the project frame.

Method
1. Load: each model's clash geometry once (geometry.load), whatever sides it is on; each element's box is moved into
   the project frame by its model's matrix (the 8 corners of its own box).
2. Broad phase (vectorised): a uniform grid of cells about the size of a typical element; each element's box is
   listed in the cells it covers, and a pair is a candidate when both are listed in the cell of the larger of their
   low corners (so every pair is met once) and their boxes overlap: by more than the tolerance for hard clashes,
   within the distance for clearance, within the tolerance on all six bounds for duplicates. Boxes spanning more
   than MAX_CELLS cells (slabs, long walls of a big model) are tested against every box directly instead.
3. Narrow phase, pair by pair, always computed with the pair in one order (the smaller (model, GlobalId) first), so
   every number and point is the same whichever side an element is on:
   - the separating axis test over the directions of the two elements' convex hulls (manifold3d's): each hull's
     face normals and the cross products of their bent edges' directions. Along any direction, the overlap of the
     two projections is a move that separates the elements, so the smallest overlap is an upper bound of the
     penetration depth; for two convex elements these directions are exactly the ones that matter and the
     smallest overlap IS the penetration depth (the shortest move that separates them). A negative overlap is a
     gap: a lower bound of the distance. The test stops at the first axis that already decides the pair.
   - hard: depth > tolerance. When either element is not convex (a wall with openings, an L-shaped slab), the
     reported depth is their hulls' (an upper bound: the approximation; exact for a duct through a wall, too large
     for an element sitting in a recess), and the pair counts only when the solid they share (manifold3d's exact
     intersection) has a connected part thicker than the tolerance (its smallest width across its hull's faces, a
     lower bound of the depth) and of more than tolerance^3: touching faces, a window in its wall's opening, or a
     pipe through an opening are not clashes, a door 1 mm into another is not one at a 1 cm tolerance. A mesh is
     taken as a solid after welding its vertices and turning its faces to agree (ifcopenshell leaves some turned);
     a shell that is still not closed counts as its convex hull (the approximation: larger than the shell).
   - clearance: the exact smallest distance between the two triangle meshes (vertex-triangle both ways and
     edge-edge, vectorised, over the pairs of triangles whose boxes come within the distance), reported when below
     the distance; overlapping or touching pairs are reported with distance 0.
   - duplicate: same IFC class (kept in the clash geometry), boxes within the tolerance, and every vertex of each
     within the tolerance of a vertex of the other (a symmetric Hausdorff distance of the vertex sets).
   The point (project frame): for an overlap, the centre of the overlap of the two elements' boxes; for a
   clearance, the centre of the box of the midpoints of all closest pairs of features (the middle of the gap).
should_stop() is polled at least every POLL_SECONDS; on_progress(fraction) is called at most every
PROGRESS_SECONDS. Only the two sides' models are held, and a bounded cache of element meshes in the project frame.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from coordination_app.engine.errors import Cancelled
from coordination_app.engine.geometry import ModelGeometry, load

__all__ = ["Cancelled", "ClashFact", "ElementSet", "KINDS", "find_clashes"]

KINDS = ("hard", "clearance", "duplicate")
MAX_CELLS = 64  # a box covering more grid cells is tested against all boxes directly
PAIR_BLOCK = 2_000_000  # candidate pairs generated and filtered at a time
CACHE_ELEMENTS = 4096
POLL_SECONDS = 0.1
PROGRESS_SECONDS = 0.5
PLANE_EPS = 1e-5  # metres: a vertex this far outside a face's plane still counts as on it (float32 vertices)
MIN_VOLUME = 1e-12  # m^3: less shared volume than this (and than tolerance^3) is touching, not overlapping
DISTANCE_BLOCK = 131_072  # point-triangle or edge-edge combinations computed at a time
AXIS_BLOCK = 4096  # separating axes projected at a time
MAX_CROSS_AXES = 250_000  # more edge-direction pairs than this: the hulls' depth is not exact (the solids decide)
MIN_GAP = 1e-6  # metres: surfaces closer than this touch
PAIR_CHUNK = 2048  # triangle pairs measured at a time, nearest boxes first
SAME_DISTANCE = 1e-6  # metres: closest pairs this much farther than the closest still mark where the distance is


@dataclass(frozen=True)
class ElementSet:
    """One side's elements of one model."""

    model_id: str
    geometry_path: Path  # clash-geometry.bin
    matrix: np.ndarray  # 4x4 model -> project frame
    guids: frozenset[str] | None  # None = every element with geometry


@dataclass(frozen=True)
class ClashFact:
    a_model: str
    a_guid: str
    b_model: str
    b_guid: str
    point: tuple[float, float, float]  # project frame, deterministic and a/b-order-free
    depth: float | None  # hard: the shortest move that separates them (metres)
    distance: float | None  # clearance: the smallest distance (metres)


class _Clock:
    """should_stop polled and progress reported, each at its own pace."""

    def __init__(self, on_progress, should_stop):
        self.on_progress, self.should_stop = on_progress, should_stop
        self.polled = self.reported = 0.0

    def poll(self) -> None:
        now = time.monotonic()
        if now - self.polled >= POLL_SECONDS:
            self.polled = now
            if self.should_stop():
                raise Cancelled("the clash run was cancelled")

    def progress(self, fraction: float, force: bool = False) -> None:
        self.poll()
        now = time.monotonic()
        if force or now - self.reported >= PROGRESS_SECONDS:
            self.reported = now
            self.on_progress(min(1.0, max(0.0, fraction)))


class _Form:
    """An element's mesh around its own origin, with what the tests need of it that moving it does not change:
    points (float64), triangles, its box, for the separating axis test its convex hull's vertices, planes, face
    normals and edge directions (unit, each once), whether it is convex (every face of the mesh lies on its hull),
    and its solid (made when first asked). Elements of one type share one (instanced geometry)."""

    __slots__ = ("points", "faces", "low", "high", "hull_points", "planes", "normals", "edges", "convex", "solid")

    def __init__(self, points: np.ndarray, faces: np.ndarray):
        self.points, self.faces = points, faces.astype(np.int64)
        self.low, self.high = points.min(axis=0), points.max(axis=0)
        self.solid = False  # not made yet (None: cannot be made)
        self.planes = None  # the hull's (n, 4): outward unit normal, offset
        unique = points[np.unique(self.faces)]
        hull = _hull(unique)
        if hull is None:  # flat or degenerate: the mesh's own directions, never taken as a convex solid
            corners = points[self.faces]
            self.hull_points, self.convex = unique, False
            self.normals = _unique_directions(_unit(_cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])))
            self.edges = _unique_directions(_unit(np.concatenate([corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 1]])))
            return
        hull_points, hull_faces = hull
        corners = hull_points[hull_faces]
        normals = _cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        lengths = np.linalg.norm(normals, axis=1)
        normals /= np.maximum(lengths, 1e-300)[:, None]  # a sliver of the hull keeps a zero normal: bent, no plane
        flat = lengths > 1e-12
        planes = np.c_[normals[flat], -np.einsum("ij,ij->i", normals[flat], corners[flat, 0])]
        self.hull_points, self.planes = hull_points, planes
        self.normals = _unique_directions(normals[flat])
        self.edges = _unique_directions(_unit(_bent_edges(hull_points, hull_faces, normals)))
        self.convex = _on_hull(points[self.faces].mean(axis=1), planes, float(np.ptp(points, axis=0).max()))


class _Shape:
    """One element in the project frame: its origin, its form (everything else, relative to the origin) and its
    exact box."""

    __slots__ = ("origin", "form", "box")

    def __init__(self, origin: np.ndarray, points_or_form, faces: np.ndarray | None = None):
        self.origin = origin
        self.form = points_or_form if isinstance(points_or_form, _Form) else _Form(points_or_form, faces)
        self.box = np.concatenate((origin + self.form.low, origin + self.form.high))  # exact, project frame

    points = property(lambda self: self.form.points)
    faces = property(lambda self: self.form.faces)
    hull_points = property(lambda self: self.form.hull_points)
    planes = property(lambda self: self.form.planes)
    normals = property(lambda self: self.form.normals)
    edges = property(lambda self: self.form.edges)
    convex = property(lambda self: self.form.convex)

    def manifold(self):
        """The mesh as a manifold3d solid around its origin, or None when it is not a closed solid."""
        if self.form.solid is False:
            self.form.solid = _solid(self.form.points, self.form.faces)
        return self.form.solid


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross products of (n, 3) arrays (np.cross costs more than the product itself on small arrays)."""
    a0, a1, a2 = a[:, 0], a[:, 1], a[:, 2]
    b0, b1, b2 = b[:, 0], b[:, 1], b[:, 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=1)


def _unit(vectors: np.ndarray) -> np.ndarray:
    lengths = np.linalg.norm(vectors, axis=1)
    kept = lengths > 1e-9
    return vectors[kept] / lengths[kept, None]


def _hull(points: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The convex hull of the points (manifold3d's): its vertices and outward triangles; None when it is flat."""
    import manifold3d

    if len(points) < 4:
        return None
    hull = manifold3d.Manifold.hull_points(points)
    if hull.is_empty() or hull.volume() <= 0:
        return None
    mesh = hull.to_mesh64()
    return np.asarray(mesh.vert_properties)[:, :3], np.asarray(mesh.tri_verts).astype(np.int64)


def _bent_edges(points: np.ndarray, faces: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """The vectors of a closed mesh's edges whose two faces are not coplanar (not the diagonals of flat faces)."""
    ends = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    face = np.tile(np.arange(len(faces)), 3)
    ends.sort(axis=1)
    order = np.lexsort((ends[:, 1], ends[:, 0]))
    ends, face = ends[order], face[order]
    twin = np.flatnonzero((ends[1:] == ends[:-1]).all(axis=1))  # each edge's two faces are neighbours in this order
    bent = twin[np.einsum("ij,ij->i", normals[face[twin]], normals[face[twin + 1]]) < 1 - 1e-9]
    return points[ends[bent, 0]] - points[ends[bent, 1]]


def _unique_directions(unit: np.ndarray) -> np.ndarray:
    """The directions up to sign, each once (rounded to 1e-6); no zero vectors."""
    unit = unit[np.abs(unit).max(axis=1, initial=0.0) > 1e-9] if len(unit) else unit
    if not len(unit):
        return unit.reshape(0, 3)
    first = np.argmax(np.abs(unit) > 1e-9, axis=1)
    unit = unit * np.sign(unit[np.arange(len(unit)), first])[:, None]
    _, keep = np.unique(_rows(np.round(unit, 6) + 0.0), return_index=True)  # + 0.0: no -0.0
    return unit[np.sort(keep)]


def _rows(values: np.ndarray) -> np.ndarray:
    """Each row of a 2-D array as one opaque item, for a fast np.unique of rows (equal bytes, equal rows)."""
    values = np.ascontiguousarray(values)
    return values.view(np.dtype((np.void, values.dtype.itemsize * values.shape[1]))).ravel()


def _on_hull(centres: np.ndarray, planes: np.ndarray, size: float) -> bool:
    """Whether every face centre lies on the hull's boundary (on one of its planes, within float32 precision)."""
    eps = PLANE_EPS + 1e-6 * size
    step = max(1, DISTANCE_BLOCK // max(1, len(planes)))
    for start in range(0, len(centres), step):
        if ((centres[start:start + step] @ planes[:, :3].T + planes[:, 3]).max(axis=1) < -eps).any():
            return False
    return True


def _shells(faces: np.ndarray, count: int) -> list[np.ndarray]:
    """The faces of each shell (faces joined by shared vertex indices: ifcopenshell gives each representation item
    its own vertices), as index arrays into faces."""
    label = np.arange(count)
    while True:
        lowest = label[faces].min(axis=1)
        updated = label.copy()
        np.minimum.at(updated, faces.reshape(-1), np.repeat(lowest, 3))
        updated = updated[updated]  # pointer jumping
        if np.array_equal(updated, label):
            break
        label = updated
    shell = label[faces[:, 0]]
    order = np.argsort(shell, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(shell[order])) + 1)


def _closed(points: np.ndarray, faces: np.ndarray):
    """One shell as a manifold3d solid, None when it is not closed: vertices at the same place welded, and when
    manifold3d refuses the faces as they are, each face turned to agree with its neighbours (ifcopenshell leaves a
    face of a box turned now and then) and the whole turned out when it points inwards (a mirrored placement)."""
    import manifold3d

    corners = points[faces.reshape(-1)] + 0.0  # + 0.0: no -0.0
    _, first, inverse = np.unique(_rows(corners), return_index=True, return_inverse=True)
    welded = corners[first]
    triangles = inverse.reshape(-1, 3).astype(np.uint64)
    attempts = [triangles, None]
    while attempts:
        oriented = attempts.pop(0)
        if oriented is None:
            oriented = _agreeing(triangles)
            if oriented is None:
                return None
        try:
            solid = manifold3d.Manifold(manifold3d.Mesh64(vert_properties=welded, tri_verts=oriented))
        except Exception:  # noqa: BLE001 - manifold3d refuses meshes it cannot take as they are
            return None
        if solid.status() != manifold3d.Error.NoError or solid.is_empty():
            continue
        if solid.volume() > 0:
            return solid
        attempts = [oriented[:, ::-1].copy()]
    return None


def _agreeing(triangles: np.ndarray) -> np.ndarray | None:
    """The triangles turned so that every edge is walked once each way (a closed, consistently oriented surface),
    None when some edge has other than two faces."""
    edges = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    face = np.tile(np.arange(len(triangles)), 3)
    forward = edges[:, 0] < edges[:, 1]
    key = np.where(forward, edges[:, 0], edges[:, 1]) * (int(triangles.max()) + 1) + np.where(forward, edges[:, 1], edges[:, 0])
    order = np.argsort(key, kind="stable")
    key, face, forward = key[order], face[order], forward[order]
    if len(key) % 2 or not (key[0::2] == key[1::2]).all():
        return None
    neighbours: list[list[tuple[int, bool]]] = [[] for _ in range(len(triangles))]
    for one, two, same in zip(face[0::2].tolist(), face[1::2].tolist(), (forward[0::2] == forward[1::2]).tolist()):
        neighbours[one].append((two, same))  # same: both walk the edge the same way, so one of them must turn
        neighbours[two].append((one, same))
    flip = np.full(len(triangles), -1)
    for start in range(len(triangles)):
        if flip[start] >= 0:
            continue
        flip[start], stack = 0, [start]
        while stack:
            current = stack.pop()
            for other, same in neighbours[current]:
                wanted = flip[current] ^ int(same)
                if flip[other] < 0:
                    flip[other] = wanted
                    stack.append(other)
                elif flip[other] != wanted:
                    return None  # a one-sided surface
    turned = triangles.copy()
    turned[flip == 1] = turned[flip == 1][:, ::-1]
    return turned


def _solid(points: np.ndarray, faces: np.ndarray):
    """The element as one manifold3d solid: all its faces welded into one closed solid, else the union of its shells
    (shells that touch do not weld into one solid), a shell that is not closed taken as its convex hull (the
    approximation: larger than what it would hold); None when nothing has a volume."""
    import manifold3d

    whole = _closed(points, faces)
    if whole is not None:
        return whole
    solids = []
    for shell in _shells(faces, len(points)):
        solid = _closed(points, faces[shell])
        if solid is None:
            solid = manifold3d.Manifold.hull_points(points[np.unique(faces[shell])])
        if not solid.is_empty() and solid.volume() > 0:
            solids.append(solid)
    if not solids:
        return None
    return solids[0] if len(solids) == 1 else manifold3d.Manifold.batch_boolean(solids, manifold3d.OpType.Add)


# --- loading ---------------------------------------------------------------------------------------------------


class _Elements:
    """The elements of both sides, numbered 0..n-1: model, index in it, sides, box in the project frame."""

    def __init__(self, a: list[ElementSet], b: list[ElementSet] | None, clock: _Clock):
        sets = [*a, *(b or [])]
        self.models: dict[str, tuple[ModelGeometry, np.ndarray]] = {}
        for number, element_set in enumerate(sorted(sets, key=lambda s: s.model_id)):
            if element_set.model_id not in self.models:
                matrix = np.asarray(element_set.matrix, dtype=np.float64).reshape(4, 4)
                self.models[element_set.model_id] = (load(element_set.geometry_path), matrix)
            clock.progress(0.1 * (number + 1) / len(sets))
        model_ids, local, in_a, in_b, boxes = [], [], [], [], []
        self.model_names = sorted(self.models)
        for model_number, model_id in enumerate(self.model_names):
            geometry, matrix = self.models[model_id]
            side_a = _selected(geometry, [s for s in a if s.model_id == model_id])
            side_b = _selected(geometry, [s for s in (b or []) if s.model_id == model_id])
            chosen = np.flatnonzero(side_a | side_b)
            model_ids.append(np.full(len(chosen), model_number))
            local.append(chosen)
            in_a.append(side_a[chosen])
            in_b.append(side_b[chosen])
            boxes.append(moved_boxes(geometry.bounds[chosen], matrix))
        self.model = np.concatenate(model_ids) if model_ids else np.zeros(0, int)
        self.local = np.concatenate(local) if local else np.zeros(0, int)
        self.in_a = np.concatenate(in_a) if in_a else np.zeros(0, bool)
        self.in_b = np.concatenate(in_b) if in_b else np.zeros(0, bool)
        self.boxes = np.concatenate(boxes) if boxes else np.zeros((0, 6))
        keys = [(self.model_names[m], self.models[self.model_names[m]][0].guids[i]) for m, i in zip(self.model, self.local)]
        self.keys = keys
        order = sorted(range(len(keys)), key=keys.__getitem__)
        self.rank = np.empty(len(keys), dtype=np.int64)
        self.rank[order] = np.arange(len(keys))
        self.forms: OrderedDict[tuple, _Form] = OrderedDict()  # by model and mesh bytes: instances share theirs
        self.form_keys: dict[int, tuple] = {}
        self.origins = np.zeros((len(self.local), 3))  # each element's origin in the project frame
        for model_number, model_id in enumerate(self.model_names):
            geometry, matrix = self.models[model_id]
            chosen = self.model == model_number
            self.origins[chosen] = geometry.origins[self.local[chosen]] @ matrix[:3, :3].T + matrix[:3, 3]

    def __len__(self) -> int:
        return len(self.local)

    def type(self, e: int) -> str:
        return self.models[self.model_names[self.model[e]]][0].types[self.local[e]]

    def form_key(self, e: int) -> tuple:
        """Element e's form's key: its model and the digest of its mesh (instances of one type share it)."""
        key = self.form_keys.get(e)
        if key is None:
            geometry = self.models[self.model_names[self.model[e]]][0]
            i = self.local[e]
            digest = hashlib.blake2b(geometry.vertices[i].tobytes() + geometry.faces[i].tobytes(), digest_size=16).digest()
            key = self.form_keys[e] = (int(self.model[e]), digest)
        return key

    def form(self, e: int) -> _Form:
        key = self.form_key(e)
        form = self.forms.get(key)
        if form is not None:
            self.forms.move_to_end(key)
            return form
        geometry, matrix = self.models[self.model_names[self.model[e]]]
        i = self.local[e]
        form = self.forms[key] = _Form(geometry.vertices[i].astype(np.float64) @ matrix[:3, :3].T, geometry.faces[i])
        if len(self.forms) > CACHE_ELEMENTS:
            self.forms.popitem(last=False)
        return form

    def shape(self, e: int) -> _Shape:
        return _Shape(self.origins[e], self.form(e))

    def vertices(self, e: int) -> np.ndarray:
        """Element e's vertices in the project frame (float64)."""
        shape = self.shape(e)
        return shape.origin + shape.points


def _selected(geometry: ModelGeometry, sets: list[ElementSet]) -> np.ndarray:
    chosen = np.zeros(len(geometry), dtype=bool)
    for element_set in sets:
        if element_set.guids is None:
            chosen[:] = True
        else:
            found = [geometry.index[g] for g in element_set.guids if g in geometry.index]
            chosen[found] = True
    return chosen


_CORNERS = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=bool)


def moved_boxes(bounds: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """The project-frame boxes of model-frame boxes (n, 6): the box of their 8 moved corners."""
    if np.allclose(matrix[:3, :3], np.eye(3)):
        return bounds + np.r_[matrix[:3, 3], matrix[:3, 3]]
    corners = np.where(_CORNERS[None], bounds[:, None, 3:], bounds[:, None, :3]) @ matrix[:3, :3].T + matrix[:3, 3]
    return np.c_[corners.min(axis=1), corners.max(axis=1)]


# --- broad phase -------------------------------------------------------------------------------------------------


def _overlapping(boxes: np.ndarray, i: np.ndarray, j: np.ndarray, margin: float) -> np.ndarray:
    """Whether boxes i and j overlap by more than -margin on every axis (margin > 0: within margin of each other)."""
    return ((boxes[i, :3] <= boxes[j, 3:] + margin) & (boxes[j, :3] <= boxes[i, 3:] + margin)).all(axis=1)


def candidate_pairs(boxes: np.ndarray, margin: float, clock: _Clock | None = None) -> np.ndarray:
    """Pairs (k, 2) of box indices, i < j, whose boxes overlap by more than -margin on every axis, each once."""
    n = len(boxes)
    if n < 2:
        return np.zeros((0, 2), dtype=np.int64)
    grow = max(margin, 0.0) / 2
    low, high = boxes[:, :3] - grow, boxes[:, 3:] + grow
    extent = (high - low).max(axis=1)
    cell = max(float(np.median(extent)), 1e-3)
    first = np.floor((low - low.min(axis=0)) / cell).astype(np.int64)
    last = np.floor((high - low.min(axis=0)) / cell).astype(np.int64)
    span = last - first + 1
    counts = span.prod(axis=1)
    big = counts > MAX_CELLS
    found = [_grid_pairs(np.flatnonzero(~big), first, span, counts, boxes, margin, clock)]
    for e in np.flatnonzero(big):  # against every box; a big-big pair once (the other with a larger index)
        others = np.flatnonzero(~big | (np.arange(n) > e))
        others = others[others != e]
        hit = others[_overlapping(boxes, np.full(len(others), e), others, margin)]
        found.append(np.c_[np.minimum(hit, e), np.maximum(hit, e)])
        if clock is not None:
            clock.poll()
    pairs = np.concatenate(found)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def _grid_pairs(members, first, span, counts, boxes, margin, clock) -> np.ndarray:
    if len(members) < 2:
        return np.zeros((0, 2), dtype=np.int64)
    count = counts[members]
    owner = np.repeat(members, count)
    offset = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    dx, dy = span[owner, 0], span[owner, 1]
    cell = first[owner] + np.c_[offset % dx, (offset // dx) % dy, offset // (dx * dy)]
    key = (cell[:, 0] << 42) | (cell[:, 1] << 21) | cell[:, 2]
    order = np.argsort(key, kind="stable")
    owner, cell, key = owner[order], cell[order], key[order]
    group_end = np.r_[np.flatnonzero(np.diff(key)) + 1, len(key)]
    end = np.repeat(group_end, np.diff(np.r_[0, group_end]))
    partners = end - np.arange(len(key)) - 1
    found = []
    start = 0
    cumulative = np.cumsum(partners)
    while start < len(key):
        stop = int(np.searchsorted(cumulative, (cumulative[start - 1] if start else 0) + PAIR_BLOCK, side="right"))
        stop = max(stop, start + 1)
        these = partners[start:stop]
        left = np.repeat(np.arange(start, stop), these)
        right = left + 1 + (np.arange(these.sum()) - np.repeat(np.cumsum(these) - these, these))
        i, j = owner[left], owner[right]
        # met once: in the cell of the larger of the two low corners
        lowest = np.maximum(first[i], first[j])
        keep = (lowest == cell[left]).all(axis=1) & _overlapping(boxes, i, j, margin)
        found.append(np.c_[np.minimum(i[keep], j[keep]), np.maximum(i[keep], j[keep])])
        start = stop
        if clock is not None:
            clock.poll()
    return np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)


# --- narrow phase ------------------------------------------------------------------------------------------------


def _axis_blocks(first: _Shape, second: _Shape):
    """The separating axes in blocks: both shapes' face normals, then the cross products of their edge directions
    (unit), a block of rows at a time; the last item says whether every cross product was given (not beyond
    MAX_CROSS_AXES)."""
    yield first.normals
    yield second.normals
    complete = len(first.edges) * len(second.edges) <= MAX_CROSS_AXES
    if complete:
        rows = max(1, AXIS_BLOCK // max(1, len(second.edges)))
        for start in range(0, len(first.edges), rows):
            yield _unit(_cross(np.repeat(first.edges[start:start + rows], len(second.edges), axis=0), np.tile(second.edges, (len(first.edges[start:start + rows]), 1))))
    yield complete


def _smallest_overlaps(first, second, offsets: np.ndarray, enough: float = -np.inf) -> tuple[np.ndarray, bool]:
    """The smallest overlap of two forms' hull projections over the separating axes, for each offset (n, 3) of the
    second's origin from the first's, and whether every axis was tried. Stops at the first axis block after which
    every overlap is `enough` or less."""
    smallest = np.full(len(offsets), np.inf)
    for block in _axis_blocks(first, second):
        if isinstance(block, bool):
            return smallest, block
        if not len(block):
            continue
        p, q = first.hull_points @ block.T, second.hull_points @ block.T
        p_low, p_high, q_low, q_high = p.min(axis=0), p.max(axis=0), q.min(axis=0), q.max(axis=0)
        rows = max(1, DISTANCE_BLOCK // len(block))
        for start in range(0, len(offsets), rows):
            shift = offsets[start:start + rows] @ block.T
            overlap = np.minimum(p_high - (q_low + shift), (q_high + shift) - p_low)
            smallest[start:start + rows] = np.minimum(smallest[start:start + rows], overlap.min(axis=1))
        if (smallest <= enough).all():
            return smallest, True
    return smallest, True


def separation(first: _Shape, second: _Shape, enough: float = -np.inf) -> tuple[float, bool]:
    """The smallest overlap of the two hulls' projections over the separating axes (see the module's description)
    and whether every axis was tried: the penetration depth of two convex shapes, an upper bound of it otherwise;
    negative: a gap, a lower bound of their distance. Stops at the first axis overlapping by `enough` or less."""
    smallest, exact = _smallest_overlaps(first, second, (second.origin - first.origin)[None, :], enough)
    return float(smallest[0]), exact


def separations(elements: "_Elements", pairs: np.ndarray, clock: _Clock) -> tuple[np.ndarray, np.ndarray]:
    """separation() of every pair (i, j) of elements, i's hull first, and whether it is exact: computed once per
    pair of forms for all its pairs together (the instances of one type against those of another share their axes
    and their hulls' projections; only the offsets between their origins differ)."""
    values, exact = np.empty(len(pairs)), np.ones(len(pairs), dtype=bool)
    groups: dict[tuple, list[int]] = {}
    for number, (i, j) in enumerate(pairs.tolist()):
        groups.setdefault((elements.form_key(i), elements.form_key(j)), []).append(number)
    for members in groups.values():
        clock.poll()
        members = np.array(members)
        first, second = elements.form(int(pairs[members[0], 0])), elements.form(int(pairs[members[0], 1]))
        offsets = elements.origins[pairs[members, 1]] - elements.origins[pairs[members, 0]]
        values[members], exact[members] = _smallest_overlaps(first, second, offsets)
    return values, exact


def shared_solid(first: _Shape, second: _Shape) -> tuple[float, float] | None:
    """(volume, thickness) of the thickest connected part of the solid the two elements share (manifold3d's exact
    intersection; a part's thickness: its smallest width across its hull's faces), None when either has no
    volume."""
    one, two = first.manifold(), second.manifold()
    if one is None or two is None:
        return None
    shared = one ^ two.translate(tuple(second.origin - first.origin))
    if shared.is_empty() or shared.volume() <= 0:
        return 0.0, 0.0
    best = (0.0, 0.0)
    for part in shared.decompose():
        hull = _hull(np.asarray(part.to_mesh64().vert_properties)[:, :3])
        if hull is None:
            continue
        points, faces = hull
        directions = _unique_directions(_unit(_cross(points[faces[:, 1]] - points[faces[:, 0]], points[faces[:, 2]] - points[faces[:, 0]])))
        if len(directions):
            widths = points @ directions.T
            best = max(best, (float((widths.max(axis=0) - widths.min(axis=0)).min()), float(part.volume())))
    return best[1], best[0]


def _segment_distances(p1, q1, p2, q2):
    """Closest points between segments p1q1 (k, 3) and p2q2 (k, 3) (Ericson, Real-Time Collision Detection 5.1.9;
    no degenerate segments): distances and the two points."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e = np.einsum("ij,ij->i", d1, d1), np.einsum("ij,ij->i", d2, d2)
    b, c, f = np.einsum("ij,ij->i", d1, d2), np.einsum("ij,ij->i", d1, r), np.einsum("ij,ij->i", d2, r)
    denominator = a * e - b * b
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(denominator > 1e-15 * a * e, np.clip((b * f - c * e) / denominator, 0, 1), 0.0)
        t = (b * s + f) / e
        s = np.where(t < 0, np.clip(-c / a, 0, 1), np.where(t > 1, np.clip((b - c) / a, 0, 1), s))
    t = np.clip(t, 0, 1)
    x, y = p1 + d1 * s[:, None], p2 + d2 * t[:, None]
    return np.linalg.norm(x - y, axis=1), x, y


def _point_face_distances(points, corners):
    """Distances of points (k, 3) to the planes of triangles (k, 3, 3) where the point's projection falls inside
    the triangle (inf elsewhere: the edges cover those), and the projections."""
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
    normal = _cross(b - a, c - a)
    normal /= np.maximum(np.linalg.norm(normal, axis=1), 1e-300)[:, None]
    height = np.einsum("ij,ij->i", points - a, normal)
    foot = points - height[:, None] * normal
    inside = ((np.einsum("ij,ij->i", _cross(b - a, foot - a), normal) >= 0)
              & (np.einsum("ij,ij->i", _cross(c - b, foot - b), normal) >= 0)
              & (np.einsum("ij,ij->i", _cross(a - c, foot - c), normal) >= 0))
    return np.where(inside, np.abs(height), np.inf), foot


def _near(corners: np.ndarray, box: np.ndarray, reach: float) -> np.ndarray:
    return ((corners.min(axis=1) <= box[3:] + reach) & (corners.max(axis=1) >= box[:3] - reach)).all(axis=1)


def _triangle_pairs(one: np.ndarray, two: np.ndarray, reach: float):
    """Blocks of index pairs (i, j) of the triangles (n, 3, 3) of one and two whose boxes come within reach, with
    the distance between their boxes (a lower bound of theirs), nearest first within a block."""
    low_one, high_one = one.min(axis=1), one.max(axis=1)
    low_two, high_two = two.min(axis=1), two.max(axis=1)
    rows = max(1, DISTANCE_BLOCK // max(1, len(two)))
    for start in range(0, len(one), rows):
        gaps = np.maximum(low_two[None] - high_one[start:start + rows, None], low_one[start:start + rows, None] - high_two[None])
        bound = np.sqrt((np.maximum(gaps, 0.0) ** 2).sum(axis=2))
        i, j = np.nonzero(bound < reach)
        order = np.argsort(bound[i, j], kind="stable")
        yield i[order] + start, j[order], bound[i, j][order]


def mesh_distance(first: _Shape, second: _Shape, reach: float) -> tuple[float, np.ndarray] | None:
    """The smallest distance between the two triangle meshes and where it is (relative to first's origin): the
    centre of the box of the midpoints of every closest pair of features (a face seen from a parallel face has a
    whole patch of closest pairs: its middle, whichever vertex comes first), when it is below reach; None
    otherwise."""
    offset = second.origin - first.origin
    one, two = first.points[first.faces], second.points[second.faces] + offset
    box_one, box_two = np.r_[first.points.min(axis=0), first.points.max(axis=0)], np.r_[two.reshape(-1, 3).min(axis=0), two.reshape(-1, 3).max(axis=0)]
    one, two = one[_near(one, box_two, reach)], two[_near(two, box_one, reach)]
    if not len(one) or not len(two):
        return None
    found = []  # (distances, midpoints) of each chunk's closest pairs
    best = reach
    for pairs_i, pairs_j, bounds in _triangle_pairs(one, two, reach):
        for start in range(0, len(pairs_i), PAIR_CHUNK):
            if bounds[start] > best + SAME_DISTANCE:
                break  # the rest of the block is farther apart than the closest pair found
            i, j = pairs_i[start:start + PAIR_CHUNK], pairs_j[start:start + PAIR_CHUNK]
            a, b = one[i], two[j]
            for points, triangles in ((b.reshape(-1, 3), np.repeat(a, 3, axis=0)), (a.reshape(-1, 3), np.repeat(b, 3, axis=0))):
                distances, feet = _point_face_distances(points, triangles)
                found.append(_closest(distances, (feet + points) / 2))
            starts_one, ends_one = np.repeat(a, 3, axis=1).reshape(-1, 3), np.repeat(a[:, [1, 2, 0]], 3, axis=1).reshape(-1, 3)
            starts_two, ends_two = np.tile(b, (1, 3, 1)).reshape(-1, 3), np.tile(b[:, [1, 2, 0]], (1, 3, 1)).reshape(-1, 3)
            kept = (np.abs(ends_one - starts_one).max(axis=1) > 1e-12) & (np.abs(ends_two - starts_two).max(axis=1) > 1e-12)
            distances, x, y = _segment_distances(starts_one[kept], ends_one[kept], starts_two[kept], ends_two[kept])
            found.append(_closest(distances, None, x, y))
            best = min(best, min((d.min() for d, _ in found[-3:] if len(d)), default=best))
    smallest = min((distances.min() for distances, _ in found if len(distances)), default=np.inf)
    if not smallest < reach:
        return None
    near = np.concatenate([middles[distances <= smallest + SAME_DISTANCE] for distances, middles in found if len(distances)])
    return float(smallest), (near.min(axis=0) + near.max(axis=0)) / 2


def _closest(distances: np.ndarray, middles: np.ndarray | None, x=None, y=None) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of a block within SAME_DISTANCE of its smallest distance: (distances, midpoints)."""
    if not len(distances) or not np.isfinite(distances).any():
        return np.zeros(0), np.zeros((0, 3))
    kept = distances <= distances.min() + SAME_DISTANCE
    return distances[kept], middles[kept] if middles is not None else (x[kept] + y[kept]) / 2


def _hausdorff_within(first: np.ndarray, second: np.ndarray, tolerance: float) -> bool:
    from scipy.spatial import cKDTree

    return bool(np.isfinite(cKDTree(second).query(first, distance_upper_bound=tolerance * (1 + 1e-9) + 1e-12)[0]).all()
                and np.isfinite(cKDTree(first).query(second, distance_upper_bound=tolerance * (1 + 1e-9) + 1e-12)[0]).all())


# --- the run -----------------------------------------------------------------------------------------------------


def _apart(first: _Shape, second: _Shape) -> bool:
    """For meshes that are not closed solids: whether they surely share no volume: their surfaces stay apart and no
    vertex of either lies in the other's convex hull (a part nested inside the other would have its vertices
    there)."""
    offset = second.origin - first.origin
    return (not _in_hull(first.points - offset, second) and not _in_hull(second.points + offset, first)
            and mesh_distance(first, second, MIN_GAP) is None)


def _in_hull(points: np.ndarray, shape: _Shape) -> bool:
    """Whether any of the points (relative to shape's origin) lies in shape's hull (its box when it has none)."""
    if shape.planes is None:
        low, high = shape.points.min(axis=0), shape.points.max(axis=0)
        return bool(((points >= low) & (points <= high)).all(axis=1).any())
    step = max(1, DISTANCE_BLOCK // max(1, len(shape.planes)))
    return any(bool(((points[start:start + step] @ shape.planes[:, :3].T + shape.planes[:, 3]).max(axis=1) < -MIN_GAP).any())
               for start in range(0, len(points), step))


def _box_centre(first: np.ndarray, second: np.ndarray) -> tuple[float, float, float]:
    """The centre of the overlap of two boxes (min x y z, max x y z)."""
    low, high = np.maximum(first[:3], second[:3]), np.minimum(first[3:], second[3:])
    return tuple(float(v) for v in (low + high) / 2)


def _judge(elements: _Elements, i: int, j: int, kind: str, tolerance: float, distance: float, separated: tuple[float, bool]):
    """(point, depth, distance) of the pair i, j (i the smaller (model, GlobalId)), or None when it is no clash;
    separated: separation() of the pair."""
    if kind == "duplicate":
        if elements.type(i) != elements.type(j) or not _hausdorff_within(elements.vertices(i), elements.vertices(j), tolerance):
            return None
        return _box_centre(elements.shape(i).box, elements.shape(j).box), None, None
    first, second = elements.shape(i), elements.shape(j)
    if kind == "hard":
        depth, exact = separated
        if depth <= tolerance:
            return None
        if not (exact and first.convex and second.convex):  # the hulls' depth decides nothing: the shared solid does
            shared = shared_solid(first, second)
            if shared is None:
                if _apart(first, second):
                    return None
            elif shared[0] <= max(tolerance ** 3, MIN_VOLUME) or shared[1] <= tolerance:
                return None
        return _box_centre(first.box, second.box), depth, None
    overlap, exact = separated
    if -overlap >= distance:  # a separating gap already as wide as the distance
        return None
    if overlap > -MIN_GAP:  # touching or overlapping hulls: overlapping solids are 0 apart
        if exact and first.convex and second.convex:
            return _box_centre(first.box, second.box), None, 0.0
        shared = shared_solid(first, second)
        if shared is not None and shared[0] > MIN_VOLUME:
            return _box_centre(first.box, second.box), None, 0.0
    closest = mesh_distance(first, second, distance)
    if closest is None:
        return None
    gap, where = closest
    return tuple(float(v) for v in first.origin + where), None, gap


def find_clashes(a: list[ElementSet], b: list[ElementSet] | None, *, kind: str, tolerance: float = 0.01,
                 distance: float = 0.0, on_progress=lambda fraction: None, should_stop=lambda: False) -> list[ClashFact]:
    """The clashes of kind "hard" | "clearance" | "duplicate" between set A and set B (A against itself when b is
    None: each unordered pair once, never an element against itself), sorted by (a model, a GlobalId, b model,
    b GlobalId). For A against B the a-fields are the element of A (of a pair with both elements in both sets, the
    smaller (model, GlobalId)). Raises Cancelled when should_stop() turns true, ValueError on a bad kind or a
    negative tolerance or distance."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if tolerance < 0 or distance < 0:
        raise ValueError("tolerance and distance must not be negative")
    clock = _Clock(on_progress, should_stop)
    clock.progress(0.0, force=True)
    elements = _Elements(a, b, clock)
    margin = {"hard": -tolerance * (1 - 1e-9), "clearance": distance, "duplicate": 0.0}[kind]
    pairs = candidate_pairs(elements.boxes, margin, clock)
    first, second = pairs[:, 0], pairs[:, 1]
    if b is None:
        valid = elements.in_a[first] & elements.in_a[second]
    else:
        valid = (elements.in_a[first] & elements.in_b[second]) | (elements.in_a[second] & elements.in_b[first])
    if kind == "duplicate":
        valid &= (np.abs(elements.boxes[first] - elements.boxes[second]) <= tolerance).all(axis=1)
    pairs = pairs[valid]
    swap = elements.rank[pairs[:, 1]] < elements.rank[pairs[:, 0]]  # each pair smaller (model, GlobalId) first
    pairs[swap] = pairs[swap][:, ::-1]
    clock.progress(0.15, force=True)
    if kind == "duplicate":
        separated = np.zeros(len(pairs)), np.ones(len(pairs), dtype=bool)
    else:
        separated = separations(elements, pairs, clock)
        decided = separated[0] > (tolerance if kind == "hard" else -distance)
        pairs, separated = pairs[decided], (separated[0][decided], separated[1][decided])
    clock.progress(0.3, force=True)
    facts = []
    for number, (i, j) in enumerate(pairs.tolist()):
        clock.progress(0.3 + 0.7 * number / max(1, len(pairs)))
        judged = _judge(elements, i, j, kind, tolerance, distance, (float(separated[0][number]), bool(separated[1][number])))
        if judged is None:
            continue
        point, depth, gap = judged
        if b is not None and not (elements.in_a[i] and elements.in_b[j]):
            i, j = j, i  # a is the element of A (i is in A only)
        (a_model, a_guid), (b_model, b_guid) = elements.keys[i], elements.keys[j]
        facts.append(ClashFact(a_model, a_guid, b_model, b_guid, point, depth, gap))
    clock.progress(1.0, force=True)
    facts.sort(key=lambda fact: (fact.a_model, fact.a_guid, fact.b_model, fact.b_guid))
    return facts
