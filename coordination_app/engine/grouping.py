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
    """Chains of points each within reach of the next (single linkage), named after the smallest clash id (or index)."""
    from scipy.spatial import cKDTree

    if not clashes:
        return {}
    points = np.array([clash["point"] for clash in clashes], dtype=float)
    parent = np.arange(len(points))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in sorted(cKDTree(points).query_pairs(reach)):
        ri, rj = root(i), root(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    names: dict[int, str] = {}
    for i, clash in enumerate(clashes):
        name = str(clash.get("clashId", f"{i:08d}"))
        r = root(i)
        names[r] = min(names.get(r, name), name)
    return {i: f"proximity:{names[root(i)]}" for i in range(len(clashes))}


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
