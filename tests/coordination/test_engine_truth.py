"""The clash engine on generated models whose clashes are known by construction (tests/coordination/truth.py):
every expected clash found, none else, depth and distance within 1 mm, points order-free; with the services model
in its own frame put back by its IfcMapConversion (the matrices from georeference()) and without any georeference;
once through a real conversion (the clash-geometry.bin and georeference.json it publishes)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from coordination_app.engine import clashes as engine
from coordination_app.engine.clashes import Cancelled, ElementSet, find_clashes
from coordination_app.engine.geometry import GeometryError, build_clash_geometry, load
from models_app.conversion import runner
from models_app.conversion.georeference import georeference
from tests.coordination import truth
from viewer_gateway.config import SHIPPED_CONVERTER

MM = 1e-3


def _models(folder, moved: bool):
    structure_ifc, services_ifc = folder / "structure.ifc", folder / "services.ifc"
    names = {}
    for name, guid in truth.write_structure(structure_ifc, georeferenced=moved).items():
        names[guid] = name
    for name, guid in truth.write_services(services_ifc, moved=moved).items():
        names[guid] = name
    build_clash_geometry(structure_ifc, folder / "structure.bin")
    build_clash_geometry(services_ifc, folder / "services.bin")
    first, second = truth.project_matrices(georeference(str(structure_ifc)), georeference(str(services_ifc)))
    return {"names": names, "structure": ElementSet("m_s", folder / "structure.bin", first, None),
            "services": ElementSet("m_m", folder / "services.bin", second, None)}


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
    return _models(tmp_path_factory.mktemp("moved"), moved=True)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return _models(tmp_path_factory.mktemp("plain"), moved=False)


def _named(models, facts):
    names = models["names"]
    return {(names[fact.a_guid], names[fact.b_guid]): fact for fact in facts}


def _assert_hard(found: dict, expected: dict):
    assert sorted(found) == sorted(expected)
    for pair, (depth, point) in expected.items():
        assert found[pair].depth == pytest.approx(depth, abs=MM), pair
        assert found[pair].distance is None
        assert found[pair].point == pytest.approx(point, abs=MM), pair


def test_the_services_model_is_put_back_by_its_map_conversion(moved):
    matrix = moved["services"].matrix
    assert np.allclose(matrix, truth.services_frame(), atol=1e-9)
    assert np.allclose(moved["structure"].matrix, np.eye(4))


@pytest.mark.parametrize("case", ["moved", "plain"])
def test_hard_clashes_are_exactly_the_expected_ones(case, request):
    models = request.getfixturevalue(case)
    found = _named(models, find_clashes([models["structure"]], [models["services"]], kind="hard", tolerance=truth.TOLERANCE))
    # touching faces (D2 on B1, B2), a pipe through an opening (D1 in W1) and near misses are no hard clashes;
    # coplanar tops (D3 in B3, B4) and a sleeve wholly inside a column (D4 in C4) are
    _assert_hard(found, truth.HARD)


def test_clearance_reports_what_is_closer_than_the_distance_with_overlaps_at_zero(moved):
    found = _named(moved, find_clashes([moved["structure"]], [moved["services"]], kind="clearance", tolerance=truth.TOLERANCE,
                                       distance=truth.CLEARANCE))
    assert sorted(found) == sorted(truth.CLEAR)  # P1 at 49 mm is in, P2 at 51 mm is not
    for pair, distance in truth.CLEAR.items():
        assert found[pair].distance == pytest.approx(distance, abs=MM), pair
        assert found[pair].depth is None
    assert found[("C2", "P1")].point == pytest.approx((5.7755, 0.0, 1.0), abs=MM)  # the middle of the gap
    assert found[("B1", "D2")].point == pytest.approx((4.5, 0.0, 3.0), abs=MM)  # the middle of the touching patch


def test_a_model_against_itself_meets_each_pair_once(moved):
    services = moved["services"]
    _assert_hard(_named(moved, [fact if moved["names"][fact.a_guid] == "D2" else _swapped(fact)
                                for fact in find_clashes([services], None, kind="hard")]), truth.SERVICES_HARD)
    duplicates = find_clashes([services], None, kind="duplicate", tolerance=truth.TOLERANCE)
    assert {tuple(sorted(pair)) for pair in _named(moved, duplicates)} == truth.SERVICES_DUPLICATES
    assert all(fact.a_guid < fact.b_guid for fact in duplicates)
    # the grid's beams end on the columns' faces: touching, no clash
    assert find_clashes([moved["structure"]], None, kind="hard") == []


def _swapped(fact):
    return engine.ClashFact(fact.b_model, fact.b_guid, fact.a_model, fact.a_guid, fact.point, fact.depth, fact.distance)


def test_swapping_the_sides_swaps_a_and_b_and_nothing_else(moved):
    forward = find_clashes([moved["structure"]], [moved["services"]], kind="hard")
    backward = find_clashes([moved["services"]], [moved["structure"]], kind="hard")
    assert sorted(map(_swapped, backward), key=lambda f: (f.a_guid, f.b_guid)) == sorted(forward, key=lambda f: (f.a_guid, f.b_guid))
    assert {f.a_model for f in forward} == {"m_s"} and {f.a_model for f in backward} == {"m_m"}


def test_a_pair_in_both_sets_is_reported_once_with_the_smaller_element_as_a(moved):
    both = [moved["structure"], moved["services"]]
    facts = find_clashes(both, both, kind="hard")
    assert len(facts) == len(truth.HARD) + len(truth.SERVICES_HARD)
    assert all((f.a_model, f.a_guid) < (f.b_model, f.b_guid) for f in facts)


def test_the_sets_take_only_their_guids(moved):
    names = {name: guid for guid, name in moved["names"].items()}
    beams = ElementSet("m_s", moved["structure"].geometry_path, moved["structure"].matrix, frozenset({names["B1"], names["C4"]}))
    found = _named(moved, find_clashes([beams], [moved["services"]], kind="hard"))
    assert sorted(found) == [("B1", "D1"), ("C4", "D4")]


def test_a_tolerance_above_the_depth_lets_a_clash_go(moved):
    found = _named(moved, find_clashes([moved["structure"]], [moved["services"]], kind="hard", tolerance=0.22))
    # W1 is not convex (its opening): its depth with D5 is their hulls' (0.5, here exact), but the pair counts only
    # when the solid they share is thicker than the tolerance: D5 x W1 is 0.2 thick (the wall)
    assert sorted(found) == [("B1", "D1"), ("B2", "D1"), ("C4", "D4")]
    assert _named(moved, find_clashes([moved["structure"]], [moved["services"]], kind="hard", tolerance=0.26)).keys() == {("C4", "D4")}


def test_progress_is_reported_and_a_stop_cancels(moved):
    seen = []
    find_clashes([moved["structure"]], [moved["services"]], kind="clearance", distance=0.05, on_progress=seen.append)
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)
    with pytest.raises(Cancelled):
        find_clashes([moved["structure"]], [moved["services"]], kind="hard", should_stop=lambda: True)


def test_bad_arguments_and_files_are_refused(moved, tmp_path):
    with pytest.raises(ValueError, match="kind"):
        find_clashes([moved["structure"]], None, kind="soft")
    with pytest.raises(ValueError, match="negative"):
        find_clashes([moved["structure"]], None, kind="hard", tolerance=-1)
    broken = tmp_path / "broken.bin"
    broken.write_bytes(moved["structure"].geometry_path.read_bytes()[:200])
    with pytest.raises(GeometryError):
        load(broken)
    with pytest.raises(Cancelled):
        build_clash_geometry(tmp_path / "never.ifc", tmp_path / "never.bin", should_stop=lambda: True)
    assert not (tmp_path / "never.bin").exists()


def test_a_conversion_keeps_the_clash_geometry_and_georeference(moved, tmp_path):
    """The services model through the real conversion: its clash-geometry.bin gives the same clashes, and its
    georeference.json the same matrix."""
    ifc, out = tmp_path / "services.ifc", tmp_path / "out"
    out.mkdir()
    guids = truth.write_services(ifc, moved=True)
    result = runner.run_pipeline(ifc, out, node_bin="node", converter_script=SHIPPED_CONVERTER, timeout_seconds=120,
                                 on_progress=lambda *_: None)
    assert result.ok, result.error
    placement = json.loads((out / "georeference.json").read_text())
    assert placement == json.loads(json.dumps(georeference(str(ifc))))
    converted = load(out / "clash-geometry.bin")
    assert sorted(converted.guids) == sorted(guids.values())
    assert {converted.types[converted.index[guids[name]]] for name in ("D1", "D4", "P1")} == {"IfcDuctSegment", "IfcDuctFitting", "IfcPipeSegment"}
    services = ElementSet("m_m", out / "clash-geometry.bin", moved["services"].matrix, None)
    names = {guid: name for name, guid in guids.items()} | {g: n for g, n in moved["names"].items() if n[0] in "BCW"}
    found = {(names[f.a_guid], names[f.b_guid]): f for f in find_clashes([moved["structure"]], [services], kind="hard")}
    _assert_hard(found, truth.HARD)
