"""The engine's pure parts the app uses around a run: selection by IFC class (with subclasses, less exclusions),
element facts from metadata.json (class, name, storey), grouping of clashes, and the clash geometry format read back
as written."""

from __future__ import annotations

import numpy as np
import pytest

from coordination_app.engine import elements, grouping, selection
from coordination_app.engine.geometry import GeometryError, load
from models_app.conversion.clash_geometry import ClashGeometryWriter

TYPES = {"w": "IfcWallStandardCase", "s": "IfcSlab", "o": "IfcOpeningElement", "sp": "IfcSpace", "d": "IfcDuctSegment"}


def test_a_class_counts_its_subclasses_and_exclusions_win():
    assert selection.select(TYPES, "IFC4", ["IfcElement"], ["IfcFeatureElement"]) == {"w", "s", "d"}
    assert selection.select(TYPES, "IFC4", ["IfcWall"], None) == {"w"}
    assert selection.select(TYPES, "IFC4", None, ["IfcBuildingElement"]) == {"o", "sp", "d"}
    # any case; a class the schema does not know (IfcDuctSegment is IFC4) is only itself
    assert selection.select(TYPES, "IFC2X3", ["ifcelement"], None) == {"w", "s", "o"}
    assert selection.unknown_classes(["IfcWall", "IfcWal", "IfcDuctSegment"], "IFC2X3") == ["IfcWal", "IfcDuctSegment"]


def test_each_element_gets_its_nearest_storey():
    metadata = {"metaObjects": [
        {"id": "p", "type": "IfcProject", "name": "P"},
        {"id": "b", "type": "IfcBuilding", "name": "B", "parent": "p"},
        {"id": "l1", "type": "IfcBuildingStorey", "name": "Level 1", "parent": "b"},
        {"id": "w", "type": "IfcWall", "name": "Wall", "parent": "l1"},
        {"id": "door", "type": "IfcDoor", "name": None, "parent": "w"},
        {"id": "x", "type": "IfcBeam", "name": "Loose", "parent": "b"},
    ]}
    facts = elements.facts(metadata)
    assert facts["door"] == {"type": "IfcDoor", "name": "", "storey": "Level 1"}
    assert facts["l1"]["storey"] == "Level 1" and facts["x"]["storey"] == "" and facts["p"]["storey"] == ""


def _clash(clash_id, a, b, point):
    return {"clashId": clash_id, "a": {"modelId": "m1", "guid": a[0], "type": a[1], "storey": a[2]},
            "b": {"modelId": "m2", "guid": b[0], "type": b[1], "storey": b[2]}, "point": point}


def test_groups_depend_only_on_their_members():
    clashes = [_clash("c_b", ("beam", "IfcBeam", "L1"), ("d1", "IfcDuctSegment", "L1"), [0, 0, 0]),
               _clash("c_a", ("beam", "IfcBeam", "L1"), ("d2", "IfcDuctSegment", "L2"), [0.5, 0, 0]),
               _clash("c_c", ("col", "IfcColumn", ""), ("p1", "IfcPipeSegment", "L2"), [10, 0, 0])]
    assert grouping.group(clashes, "by-proximity:1") == {0: "proximity:c_a", 1: "proximity:c_a", 2: "proximity:c_c"}
    assert grouping.group(clashes, "by-proximity:0.4") == {0: "proximity:c_b", 1: "proximity:c_a", 2: "proximity:c_c"}
    assert grouping.group(clashes, "storey") == {0: "storey:L1", 1: "storey:L1", 2: "storey:L2"}
    assert grouping.group(clashes, "element") == {0: "element:m1/beam", 1: "element:m1/beam", 2: "element:m1/col"}
    assert grouping.group(clashes, "classes")[2] == "classes:IfcColumn|IfcPipeSegment"
    assert grouping.group(list(reversed(clashes)), "by-proximity:1")[2] == "proximity:c_a"  # order-free
    assert not grouping.valid("by-proximity:-1") and not grouping.valid("colour")
    with pytest.raises(ValueError):
        grouping.group(clashes, "by-proximity:x")


def test_clash_geometry_reads_back_what_was_written_far_from_the_origin(tmp_path):
    far = np.array([2_500_000.0, 5_600_000.0, 300.0])
    box = np.array([[x, y, z] for z in (0, 1) for y in (0, 2) for x in (0, 3)], dtype=float) * 0.001 + far  # 3 x 2 x 1 mm
    faces = np.arange(36).reshape(12, 3) % 8
    path = tmp_path / "clash-geometry.bin"
    with open(path, "wb") as handle:
        writer = ClashGeometryWriter(handle)
        writer.element("0Guid00000000000000001", "IfcBeam", box, faces)
        writer.element("0Guid00000000000000002", "IfcAnnotation", box, np.zeros((0, 3), dtype=int))  # no triangles: left out
        writer.element("0Guid0000000000000000é", "IfcWall", box[:4], faces[:2] % 4)
        writer.end()
    model = load(path)
    assert model.guids == ["0Guid00000000000000001", "0Guid0000000000000000é"] and model.types == ["IfcBeam", "IfcWall"]
    assert np.abs(model.world_vertices(0) - box).max() < 1e-6  # sub-micrometre a thousand kilometres out
    assert np.array_equal(model.faces[0], faces) and model.bounds[0] == pytest.approx(np.r_[box.min(axis=0), box.max(axis=0)])
    path.write_bytes(path.read_bytes()[:-4] + b"\x09\x00\x00\x00")  # the end record miscounts
    with pytest.raises(GeometryError):
        load(path)
