"""Labelled diff test set from build scripts (one kind of change each, exact expected output; geometry changes in
tests/edit_service/test_geometry_diff.py), and the same engine on real samples."""

import shutil

import ifcopenshell
import pytest

from edit_service.engine.sandbox import Sandbox, SandboxLimits
from edit_service.engine.semantic_diff import counts, diff_snapshots
from edit_service.sandbox.script_lib import guid_for
from edit_service.sandbox.snapshot import snapshot
from tests.helpers import sample

pytestmark = pytest.mark.heavy

BASE = '''import script_lib as sl

PARAMS = {"name": "Diff house"}


def build(params, out_path):
    model = sl.new_model(params["name"])
    ground = sl.storey(model, "ground", Name="Ground")
    upper = sl.storey(model, "upper", Name="Upper", elevation=3.0)
    sl.create_entity(model, "IfcWall", "wall-a", storey=ground, Name="Wall A", x=0.0, width=5.0, depth=0.2, height=3.0,
                     psets={"Pset_WallCommon": {"FireRating": "F30", "IsExternal": True}},
                     quantities={"Qto_WallBaseQuantities": {"Length": 5.0, "NetSideArea": 15.0}})
    sl.create_entity(model, "IfcWall", "wall-b", storey=ground, Name="Wall B", x=6.0, width=4.0, depth=0.2, height=3.0)
    sl.create_entity(model, "IfcSlab", "slab-a", storey=ground, Name="Slab A", width=10.0, depth=8.0, height=0.2)
    # ADD HERE
    sl.save(model, out_path)
'''

WALL_A, WALL_B, WALL_C = guid_for("wall-a"), guid_for("wall-b"), guid_for("wall-c")


class Fingerprint:
    """Any representation fingerprint (16 hex digits): its value is the hash's, the test is that it changes."""

    def __eq__(self, other):
        return isinstance(other, str) and len(other) == 16 and all(c in "0123456789abcdef" for c in other)


def placed(x: float, z: float = 0.0) -> dict:
    return {"origin": [x, 0.0, z], "xAxis": [1.0, 0.0, 0.0], "zAxis": [0.0, 0.0, 1.0]}


def moved(old: dict, new: dict, summary: str, dx=0.0, dz=0.0) -> dict:
    return {"added": [], "removed": [], "changed": [{"guid": WALL_B, "changes": [{"field": "placement", "old": old, "new": new, "summary": summary}],
                                                    "geometry": {"moved": {"dx": dx, "dy": 0.0, "dz": dz, "distance": abs(dx + dz)}}}]}


RESIZED = {"added": [], "removed": [], "changed": [{"guid": WALL_B, "changes": [{
    "field": "shape", "old": {"size": [4.0, 0.2, 3.0], "volume": 2.4, "fingerprint": Fingerprint()},
    "new": {"size": [4.5, 0.2, 3.0], "volume": 2.7, "fingerprint": Fingerprint()}, "summary": "resized 4.00 → 4.50 m; volume 2.400 → 2.700 m³"}],
    "geometry": {"size": {"old": [4.0, 0.2, 3.0], "new": [4.5, 0.2, 3.0]}, "volume": {"old": 2.4, "new": 2.7}, "representationChanged": True}}]}

CASES = {
    "rename": (('Name="Wall A"', 'Name="Wall A1"'), {"added": [], "removed": [], "changed": [{"guid": WALL_A, "changes": [{"field": "Name", "old": "Wall A", "new": "Wall A1"}]}]}),
    "pset value": (('"FireRating": "F30"', '"FireRating": "F60"'), {"added": [], "removed": [], "changed": [{"guid": WALL_A, "changes": [{"field": "Pset_WallCommon.FireRating", "old": "F30", "new": "F60"}]}]}),
    "pset boolean": (('"IsExternal": True', '"IsExternal": False'), {"added": [], "removed": [], "changed": [{"guid": WALL_A, "changes": [{"field": "Pset_WallCommon.IsExternal", "old": True, "new": False}]}]}),
    "quantity": (('"Length": 5.0', '"Length": 5.5'), {"added": [], "removed": [], "changed": [{"guid": WALL_A, "changes": [{"field": "Qto_WallBaseQuantities.Length", "old": 5, "new": 5.5}]}]}),
    "added element": (("    # ADD HERE", '    sl.create_entity(model, "IfcWall", "wall-c", storey=ground, Name="Wall C", x=11.0, width=1.0, depth=0.2, height=3.0)'), {"added": [WALL_C], "removed": [], "changed": []}),
    "removed element": (('    sl.create_entity(model, "IfcWall", "wall-b", storey=ground, Name="Wall B", x=6.0, width=4.0, depth=0.2, height=3.0)\n', ""), {"added": [], "removed": [WALL_B], "changed": []}),
    "class change, same key": (('"IfcWall", "wall-b"', '"IfcColumn", "wall-b"'), {"added": [], "removed": [], "changed": [{"guid": WALL_B, "changes": [{"field": "class", "old": "IfcWall", "new": "IfcColumn"}]}]}),
    "placement only": (('"wall-b", storey=ground, Name="Wall B", x=6.0', '"wall-b", storey=ground, Name="Wall B", x=7.5'), moved(placed(6.0), placed(7.5), "moved 1.50 m +X", dx=1.5)),
    "geometry only": (('x=6.0, width=4.0', 'x=6.0, width=4.5'), RESIZED),
    # the upper storey is 3 m up: the reference itself is not compared, the world placement it gives is
    "reference only (other storey)": (('"wall-b", storey=ground', '"wall-b", storey=upper'), moved(placed(6.0), placed(6.0, 3.0), "moved 3.00 m +Z", dz=3.0)),
    "float noise": (('"Length": 5.0', '"Length": 5.000000000000001'), {"added": [], "removed": [], "changed": []}),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    sandbox = Sandbox(SandboxLimits(wall_seconds=60))

    def snapshot_of(script: str) -> dict:
        folder = tmp_path_factory.mktemp("diffcase")
        ifc, _, _ = sandbox.build(script, {"name": "Diff house"}, folder)
        return sandbox.inspect(folder, ifc)

    return snapshot_of


@pytest.fixture(scope="module")
def base_snapshot(built):
    return built(BASE)


@pytest.mark.parametrize("case", list(CASES))
def test_labelled_change(built, base_snapshot, case):
    (old, new), expected = CASES[case]
    assert old in BASE, "the case must change the script"
    assert diff_snapshots(base_snapshot, built(BASE.replace(old, new))) == expected


def test_unchanged_script_gives_nothing(built, base_snapshot):
    assert diff_snapshots(base_snapshot, built(BASE)) == {"added": [], "removed": [], "changed": []}


def test_several_changes_at_once_are_all_reported(built, base_snapshot):
    script = BASE
    for case in ("rename", "quantity", "added element", "removed element", "placement only"):
        old, new = CASES[case][0]
        script = script.replace(old, new)
    diff = diff_snapshots(base_snapshot, built(script))
    assert diff["added"] == [WALL_C] and diff["removed"] == [WALL_B]
    assert diff["changed"] == [{"guid": WALL_A, "changes": [{"field": "Name", "old": "Wall A", "new": "Wall A1"}, {"field": "Qto_WallBaseQuantities.Length", "old": 5, "new": 5.5}]}]
    assert counts(diff) == {"added": 1, "removed": 1, "changed": 1}


@pytest.mark.parametrize("name", ["duplex.ifc", "AC20-FZK-Haus.ifc", "IfcOpenHouse_IFC4.ifc", "example.ifc"])
def test_a_sample_against_its_reserialised_self_gives_nothing(tmp_path, name):
    original = ifcopenshell.open(str(sample(name)))
    copy_path = tmp_path / name
    original.write(str(copy_path))
    assert diff_snapshots(snapshot(original), snapshot(ifcopenshell.open(str(copy_path)))) == {"added": [], "removed": [], "changed": []}


def test_duplex_with_one_property_edited_gives_exactly_that_change(tmp_path):
    import ifcopenshell.util.element

    path = tmp_path / "duplex.ifc"
    shutil.copyfile(sample("duplex.ifc"), path)
    edited = ifcopenshell.open(str(path))
    door = edited.by_type("IfcDoor")[0]
    pset = next(
        definition
        for rel in door.IsDefinedBy
        if rel.is_a("IfcRelDefinesByProperties")
        for definition in [rel.RelatingPropertyDefinition]
        if definition.is_a("IfcPropertySet") and len(definition.PropertyDefinitionOf if hasattr(definition, "PropertyDefinitionOf") else definition.DefinesOccurrence) == 1
        and any(p.is_a("IfcPropertySingleValue") and p.NominalValue and p.NominalValue.is_a("IfcLabel") for p in definition.HasProperties)
    )
    prop = next(p for p in pset.HasProperties if p.is_a("IfcPropertySingleValue") and p.NominalValue and p.NominalValue.is_a("IfcLabel"))
    old_value = prop.NominalValue.wrappedValue
    prop.NominalValue = edited.create_entity("IfcLabel", "edited by the test")
    edited.write(str(tmp_path / "edited.ifc"))

    base = snapshot(ifcopenshell.open(str(sample("duplex.ifc"))))
    diff = diff_snapshots(base, snapshot(ifcopenshell.open(str(tmp_path / "edited.ifc"))))
    assert diff == {
        "added": [],
        "removed": [],
        "changed": [{"guid": door.GlobalId, "changes": [{"field": f"{pset.Name}.{prop.Name}", "old": old_value, "new": "edited by the test"}]}],
    }
