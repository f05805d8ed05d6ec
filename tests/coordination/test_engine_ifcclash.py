"""The clash engine against ifcclash 0.9.0 (the benchmark anchor) on the sample models, same settings, same run:
a hard test of every IfcElement but IfcFeatureElement against itself with a tolerance of 1 cm (ifcclash's
intersection mode, check_all).

Every clash ifcclash reports we report too, or its two elements, meshed by ifcopenshell as ifcclash meshes them,
share no solid deeper than the tolerance: their hulls' separating axis test bounds the depth at or below it, or
manifold3d's exact intersection of the two solids is empty, or no thicker than the tolerance. These are windows in
the openings of their walls (ifcclash's "protrusion" where the faces only touch), doors 1 mm into each other, a
covering lying on a wall. Every clash only we report is a real overlap: on ifcopenshell's meshes the two solids
share a part thicker than the tolerance (ifcclash misses coplanar overlaps and elements wholly inside others: a
covering doubled on another, slabs 19 mm into the wall, furniture standing 13-19 mm into the slab).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from coordination_app.engine import selection
from coordination_app.engine.clashes import _Shape, ElementSet, find_clashes, separation, shared_solid
from coordination_app.engine.geometry import build_clash_geometry, load
from tests.helpers import sample

pytestmark = pytest.mark.heavy

TOLERANCE = 0.01
SAMPLES = ("duplex.ifc", "AC20-FZK-Haus.ifc")


def _ifcclash_pairs(ifc_path: str) -> dict[frozenset, dict]:
    import ifcclash.ifcclash as ifcclash

    settings = ifcclash.ClashSettings()
    settings.logger, settings.output = logging.getLogger("ifcclash"), "unused.json"
    clasher = ifcclash.Clasher(settings)
    clash_set = {"name": "hard", "a": [{"file": ifc_path}], "mode": "intersection", "tolerance": TOLERANCE, "check_all": True}
    clasher.clash_sets = [clash_set]
    clasher.clash()
    return {frozenset((c["a_global_id"], c["b_global_id"])): c for c in clash_set["clashes"].values()}


@pytest.fixture(scope="module", params=SAMPLES)
def compared(request, tmp_path_factory):
    import ifcopenshell

    ifc_path = str(sample(request.param))
    geometry_path = tmp_path_factory.mktemp("ifcclash") / "clash-geometry.bin"
    build_clash_geometry(ifc_path, geometry_path)
    geometry = load(geometry_path)
    ifc = ifcopenshell.open(ifc_path)
    chosen = selection.select(dict(zip(geometry.guids, geometry.types)), ifc.schema, ["IfcElement"], ["IfcFeatureElement"])
    ours = {frozenset((f.a_guid, f.b_guid)): f for f in find_clashes([ElementSet("m", geometry_path, np.eye(4), chosen)], None,
                                                                     kind="hard", tolerance=TOLERANCE)}
    return {"ifc": ifc, "theirs": _ifcclash_pairs(ifc_path), "ours": ours, "shapes": {}}


def _shapes(compared, pair) -> list[_Shape]:
    """The pair's elements as ifcclash meshes them, each meshed once per sample."""
    known = compared["shapes"]
    for guid in pair:
        if guid not in known:
            known[guid] = _shape(compared["ifc"], guid)
    return [known[guid] for guid in sorted(pair)]


def _shape(ifc, guid: str) -> _Shape:
    """The element as ifcclash meshes it (ifcopenshell's defaults: openings subtracted by OpenCascade), welded."""
    import ifcopenshell.geom

    settings = ifcopenshell.geom.settings()
    settings.set("use-world-coords", True)
    settings.set("weld-vertices", True)
    shape = ifcopenshell.geom.create_shape(settings, ifc.by_guid(guid))
    vertices = np.frombuffer(shape.geometry.verts_buffer, "<f8").reshape(-1, 3)
    origin = vertices.min(axis=0)
    return _Shape(origin, vertices - origin, np.frombuffer(shape.geometry.faces_buffer, "<i4").reshape(-1, 3))


def test_the_engines_mostly_agree(compared):
    theirs, ours = set(compared["theirs"]), set(compared["ours"])
    assert len(theirs & ours) >= 0.8 * len(theirs)


def test_every_clash_ifcclash_reports_is_ours_or_not_deeper_than_the_tolerance(compared):
    unexplained = []
    for pair in sorted(set(compared["theirs"]) - set(compared["ours"]), key=sorted):
        first, second = _shapes(compared, pair)
        bound, _ = separation(first, second)
        shared = shared_solid(first, second)
        if not (bound <= TOLERANCE or shared is not None and (shared[0] <= TOLERANCE ** 3 or shared[1] <= TOLERANCE)):
            unexplained.append((sorted(pair), compared["theirs"][pair]["type"], bound, shared))
    assert unexplained == []


def test_every_clash_only_we_report_is_a_real_overlap(compared):
    unexplained = []
    for pair in sorted(set(compared["ours"]) - set(compared["theirs"]), key=sorted):
        first, second = _shapes(compared, pair)
        shared = shared_solid(first, second)
        if shared is None or shared[0] <= TOLERANCE ** 3 or shared[1] <= TOLERANCE:
            unexplained.append((sorted(pair), compared["ours"][pair].depth, shared))
    assert unexplained == []
