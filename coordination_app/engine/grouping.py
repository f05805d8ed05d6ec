"""Groups of clashes: by proximity (points within a distance, chained), by storey, by element, by class pair.

A clash here is a mapping as the API answers it: {"clashId"?, "a": {"modelId", "guid", "type", "storey"}, "b": {...},
"point": [x, y, z]}. group(clashes, how) -> {index in clashes: group id}; every clash gets one group, and a group id
depends only on its members' facts (the same clashes give the same ids on every run)."""

from __future__ import annotations

from collections import Counter

import numpy as np

PROXIMITY = "by-proximity:"
HOWS = ("storey", "element", "classes")


def valid(how: str) -> bool:
    """Whether `how` names a grouping (by-proximity:<metres> with metres a positive number, or one of HOWS)."""
    if how.startswith(PROXIMITY):
        try:
            return float(how[len(PROXIMITY):]) > 0
        except ValueError:
            return False
    return how in HOWS


def _element(side: dict) -> str:
    return f"{side.get('modelId', '')}/{side.get('guid', '')}"


def _proximity(clashes: list[dict], reach: float) -> dict[int, str]:
    """Chains of points each within reach of the next (single linkage), named after the smallest clash id (or index).

    Cheap for any reach: a reach wider than the points' extent is one chain without looking further; few linked pairs
    are listed by cKDTree; many (dense points) link cubic cells whose diagonal is under `reach` (a cell's points are
    one chain at once; only cells at most two apart can hold linked points). Memory stays linear in the clashes."""
    if not clashes:
        return {}
    points = np.array([clash["point"] for clash in clashes], dtype=float).reshape(len(clashes), 3)
    low, high = points.min(axis=0), points.max(axis=0)
    if float(np.sum((high - low) ** 2)) <= reach * reach:
        cell_of = np.zeros(len(points), dtype=np.intp)
        parent = [0]
    else:
        parent, cell_of = _linked(points, low, reach)
    names: dict[int, str] = {}
    for i, clash in enumerate(clashes):
        name = str(clash.get("clashId", f"{i:08d}"))
        r = _root(parent, int(cell_of[i]))
        names[r] = min(names.get(r, name), name)
    return {i: f"proximity:{names[_root(parent, int(cell_of[i]))]}" for i in range(len(clashes))}


def _linked(points: np.ndarray, low: np.ndarray, reach: float) -> tuple[list[int], np.ndarray]:
    """(union-find parents, each point's node): the points themselves when their linked pairs are few (cKDTree lists
    them), else the cells (the pairs are many, so the points are dense and the cells few)."""
    from scipy.spatial import cKDTree

    tree = cKDTree(points)
    if (tree.count_neighbors(tree, reach) - len(points)) // 2 <= _PAIRS_LISTED:
        parent = list(range(len(points)))
        for i, j in tree.query_pairs(reach, output_type="ndarray").tolist():
            ri, rj = _root(parent, i), _root(parent, j)
            if ri != rj:
                parent[max(ri, rj)] = min(ri, rj)
        return parent, np.arange(len(points))
    keys, cell_of = np.unique(np.floor((points - low) / (reach / np.sqrt(3.0) * (1 - 1e-9))), axis=0,
                              return_inverse=True)
    cell_of = cell_of.reshape(-1)
    return _linked_cells(keys, cell_of, points, reach), cell_of


def _root(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


_PAIRS_LISTED = 200_000  # more pairs within reach than this: link cells instead (memory stays linear)
_NEAR = [(x, y, z) for x in range(-2, 3) for y in range(-2, 3) for z in range(-2, 3) if (x, y, z) > (0, 0, 0)]


def _linked_cells(keys: np.ndarray, cell_of: np.ndarray, points: np.ndarray, reach: float) -> list[int]:
    """Union-find parents over the cells: two cells join when some point of one is within reach of one of the other."""
    order = np.argsort(cell_of, kind="stable")
    starts = np.searchsorted(cell_of[order], np.arange(len(keys) + 1))
    members = [points[order[starts[c]:starts[c + 1]]] for c in range(len(keys))]
    index = {tuple(key): c for c, key in enumerate(keys.tolist())}
    parent = list(range(len(keys)))
    for c, key in enumerate(keys.tolist()):
        for dx, dy, dz in _NEAR:
            other = index.get((key[0] + dx, key[1] + dy, key[2] + dz))
            if other is None or other == c:
                continue
            ra, rb = _root(parent, c), _root(parent, other)
            if ra != rb and _within(members[c], members[other], reach):
                parent[max(ra, rb)] = min(ra, rb)
    return parent


def _within(a: np.ndarray, b: np.ndarray, reach: float) -> bool:
    """Whether some point of a is within reach of some point of b (in slices, so memory stays bounded)."""
    step = max(1, 65536 // max(1, len(b)))
    for start in range(0, len(a), step):
        gaps = a[start:start + step, None, :] - b[None, :, :]
        if bool((np.einsum("ijk,ijk->ij", gaps, gaps) <= reach * reach).any()):
            return True
    return False


def group(clashes: list[dict], how: str) -> dict[int, str]:
    """{index: group id} of every clash; ValueError when `how` names no grouping."""
    if not valid(how):
        raise ValueError(f"unknown grouping {how!r}: by-proximity:<metres>, {', '.join(HOWS)}")
    if how.startswith(PROXIMITY):
        return _proximity(clashes, float(how[len(PROXIMITY):]))
    if how == "storey":
        return {i: "storey:" + (clash["a"].get("storey") or clash["b"].get("storey") or "") for i, clash in enumerate(clashes)}
    if how == "classes":
        return {i: "classes:" + "|".join(sorted((clash["a"].get("type", ""), clash["b"].get("type", ""))))
                for i, clash in enumerate(clashes)}
    # element: each clash goes to whichever of its two elements takes part in more clashes (ties: the smaller)
    count = Counter(_element(side) for clash in clashes for side in (clash["a"], clash["b"]))
    return {i: "element:" + min((_element(clash["a"]), _element(clash["b"])), key=lambda e: (-count[e], e))
            for i, clash in enumerate(clashes)}
