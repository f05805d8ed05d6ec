"""Geometry in the semantic diff (issue 32): a moved, turned or resized element is changed, with the facts; a
rebuilt identical element is not; snapshots stored before geometry was recorded give no false changes. Real
sandbox builds, the real edit service over HTTP for the skeleton building."""

import json
import math
from pathlib import Path

import pytest

from edit_service.engine.sandbox import Sandbox, SandboxLimits
from edit_service.engine.semantic_diff import diff_snapshots
from edit_service.engine.store import read_json
from edit_service.engine.workflow import Editor
from edit_service.sandbox.script_lib import guid_for
from tests.edit_service.conftest import MODEL_ID
from tests.edit_service.test_api import service  # noqa: F401 - the module's real edit-service process

pytestmark = pytest.mark.heavy

SKELETON = (Path(__file__).resolve().parents[2] / "models_app" / "skeletons" / "ifc_project.py").read_text()

SCRIPT = '''import script_lib as sl

PARAMS = {"name": "Geometry house"}


def build(params, out_path):
    model = sl.new_model(params["name"])
    ground = sl.storey(model, "ground", Name="Ground")
    sl.create_entity(model, "IfcWall", "wall-a", storey=ground, Name="Wall A", x=0.0, y=0.0, width=5.0, depth=0.2, height=3.0)
    sl.create_entity(model, "IfcWall", "wall-b", storey=ground, Name="Wall B", x=6.0, y=0.0, width=4.0, depth=0.2, height=3.0)
    sl.create_entity(model, "IfcColumn", "column", storey=ground, Name="Column", x=2.0, y=3.0, rotation=0.0, width=0.4, depth=0.2, height=3.0)
    sl.create_entity(model, "IfcSlab", "slab", storey=ground, Name="Slab", width=10.0, depth=8.0, height=0.2)
    sl.save(model, out_path)
'''
WALL_A, WALL_B, COLUMN, SLAB = (guid_for(key) for key in ("wall-a", "wall-b", "column", "slab"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    sandbox = Sandbox(SandboxLimits(wall_seconds=60))

    def snapshot_of(*replacements: tuple[str, str]) -> dict:
        script = SCRIPT
        for old, new in replacements:
            assert old in script, "the case must change the script"
            script = script.replace(old, new)
        folder = tmp_path_factory.mktemp("geometry")
        ifc, _, _ = sandbox.build(script, {"name": "Geometry house"}, folder)
        return sandbox.inspect(folder, ifc)

    return snapshot_of


@pytest.fixture(scope="module")
def base(built):
    return built()


def only_change(diff: dict, guid: str) -> dict:
    assert diff["added"] == [] and diff["removed"] == []
    assert [item["guid"] for item in diff["changed"]] == [guid]
    return diff["changed"][0]


def test_a_moved_element_reports_the_move(built, base):
    item = only_change(diff_snapshots(base, built(('"wall-b", storey=ground, Name="Wall B", x=6.0, y=0.0', '"wall-b", storey=ground, Name="Wall B", x=7.0, y=-2.0'))), WALL_B)
    assert item["geometry"] == {"moved": {"dx": 1.0, "dy": -2.0, "dz": 0.0, "distance": round(math.sqrt(5), 6)}}
    [change] = item["changes"]
    assert change["field"] == "placement" and change["summary"] == "moved 2.24 m (+1.00, -2.00, +0.00)"
    assert (change["old"]["origin"], change["new"]["origin"]) == ([6.0, 0.0, 0.0], [7.0, -2.0, 0.0])


def test_a_turned_element_reports_degrees_and_axis_and_is_not_resized(built, base):
    item = only_change(diff_snapshots(base, built(("rotation=0.0", "rotation=30.0"))), COLUMN)
    assert item["geometry"] == {"turned": {"degrees": 30.0, "axis": [0.0, 0.0, 1.0], "about": "Z"}}
    [change] = item["changes"]
    assert (change["field"], change["summary"]) == ("placement", "turned 30.0° about Z")
    assert change["new"]["xAxis"] == [round(math.cos(math.radians(30)), 6), 0.5, 0.0]


def test_a_resized_element_reports_size_and_volume(built, base):
    item = only_change(diff_snapshots(base, built(('x=6.0, y=0.0, width=4.0, depth=0.2, height=3.0', 'x=6.0, y=0.0, width=4.5, depth=0.2, height=2.5'))), WALL_B)
    facts = item["geometry"]
    assert facts["size"] == {"old": [4.0, 0.2, 3.0], "new": [4.5, 0.2, 2.5]}
    assert facts["volume"] == {"old": 2.4, "new": 2.25} and facts["representationChanged"] is True
    [change] = item["changes"]
    assert change["field"] == "shape" and change["summary"] == "resized 4.00 → 4.50 m, 3.00 → 2.50 m; volume 2.400 → 2.250 m³"
    assert (change["old"]["size"], change["new"]["volume"]) == ([4.0, 0.2, 3.0], 2.25)


def test_rebuilt_identical_elements_are_unchanged(built, base):
    rebuilt = built()
    assert all("geometry" in element for element in rebuilt.values())  # recorded, so "unchanged" is a comparison
    assert diff_snapshots(base, rebuilt) == {"added": [], "removed": [], "changed": []}
    # one element renamed: the others, rebuilt identical, stay out of the diff
    renamed = built(('Name="Wall A"', 'Name="Wall A1"'))
    assert diff_snapshots(base, renamed)["changed"] == [{"guid": WALL_A, "changes": [{"field": "Name", "old": "Wall A", "new": "Wall A1"}]}]


def without_geometry(snapshot: dict) -> dict:
    return {guid: {k: v for k, v in element.items() if k != "geometry"} for guid, element in snapshot.items()}


def test_a_snapshot_without_geometry_gives_no_false_change(built, base):
    moved = built(('"wall-b", storey=ground, Name="Wall B", x=6.0', '"wall-b", storey=ground, Name="Wall B", x=9.0'))
    assert [item["guid"] for item in diff_snapshots(base, moved)["changed"]] == [WALL_B]
    for old, new in [(without_geometry(base), moved), (base, without_geometry(moved)), (without_geometry(base), without_geometry(moved))]:
        assert diff_snapshots(old, new) == {"added": [], "removed": [], "changed": []}  # geometry unknown, not changed


def test_past_the_geometry_time_budget_elements_stay_unknown(tmp_path):
    import ifcopenshell

    from edit_service.sandbox.snapshot import snapshot
    from tests.helpers import sample

    model = ifcopenshell.open(str(sample("IfcOpenHouse_IFC4.ifc")))
    measured = snapshot(model)
    element = next(e for e in model.by_type("IfcElement") if e.Representation and not e.ObjectPlacement.ReferencedByPlacements)
    assert measured[element.GlobalId]["geometry"]["shape"]["volume"] > 0
    element.ObjectPlacement.RelativePlacement.Location = model.createIfcCartesianPoint((5000.0, 0.0, 0.0))
    moved = [item["guid"] for item in diff_snapshots(measured, snapshot(model))["changed"]]
    assert element.GlobalId in moved
    hurried = snapshot(model, geometry_seconds=0)  # a model too big to measure in the inspection's time
    assert not any("geometry" in e for e in hurried.values())
    assert diff_snapshots(measured, hurried)["changed"] == []


def width_change_versions(editor: Editor) -> None:
    editor.stage(script=SKELETON)
    editor.save(note="8 m wide")
    editor.stage(params={**editor.params(), "width": 9.5})
    editor.save(note="9.5 m wide")


def check_width_change(diff: dict) -> None:
    """South wall unchanged; north wall moved 1.5 m +Y; west and east walls and the slab resized."""
    changed = {item["guid"]: item for item in diff["changed"]}
    assert set(changed) == {guid_for("wall-north-0"), guid_for("wall-west-0"), guid_for("wall-east-0"), guid_for("slab-0")}
    assert changed[guid_for("wall-north-0")]["geometry"] == {"moved": {"dx": 0.0, "dy": 1.5, "dz": 0.0, "distance": 1.5}}
    assert changed[guid_for("wall-north-0")]["changes"][0]["summary"] == "moved 1.50 m +Y"
    for side in ("west", "east"):
        facts = changed[guid_for(f"wall-{side}-0")]["geometry"]
        assert facts["size"] == {"old": [0.3, 7.4, 3.0], "new": [0.3, 8.9, 3.0]} and facts["volume"] == {"old": 6.66, "new": 8.01}
        assert "moved" not in facts
    assert changed[guid_for("slab-0")]["geometry"]["size"] == {"old": [10.0, 8.0, 0.25], "new": [10.0, 9.5, 0.25]}
    assert changed[guid_for("slab-0")]["changes"][0]["summary"] == "resized 8.00 → 9.50 m; volume 20.000 → 23.750 m³"


def test_the_skeleton_made_wider_shows_its_walls_changed_over_http(service):  # noqa: F811
    model = service.new_model()
    assert service.call("PUT", f"{model}/script", json={"script": SKELETON}).status_code == 200
    assert service.call("POST", f"{model}/script/run").json()["ok"]
    assert service.call("POST", f"{model}/script/save", json={"note": "8 m"}).json()["version"] == "v1"
    params = {**service.call("GET", f"{model}/script/params").json(), "width": 9.5}
    assert service.call("PUT", f"{model}/script", json={"params": params}).status_code == 200
    run = service.call("POST", f"{model}/script/run").json()
    assert run["semanticDiff"] == {"added": 0, "removed": 0, "changed": 4}  # the staging summary the agent reads
    assert service.call("POST", f"{model}/script/save", json={"note": "9.5 m"}).json()["version"] == "v2"
    response = service.call("POST", f"{model}/diff", json={"base": "v1", "target": "v2"})
    assert response.status_code == 200
    check_width_change(response.json())
    check_width_change(service.call("POST", f"{model}/diff", json={"base": "v1", "target": "current"}).json())


def age_versions(editor: Editor) -> None:
    """The model's version snapshots as stored before geometry was recorded, with the diff cached then."""
    for version in ("v1", "v2"):
        path = editor.files.version_file(version, ".snapshot.json")
        path.write_text(json.dumps(without_geometry(read_json(path))))
    editor.files.cache_dir.mkdir(exist_ok=True)
    (editor.files.cache_dir / "diff-v1-v2.json").write_text(json.dumps({"base": "v1", "target": "v2", "added": [], "removed": [], "changed": []}))


def test_versions_stored_without_geometry_get_it_from_their_ifc(editor):
    width_change_versions(editor)
    age_versions(editor)
    check_width_change(editor.semantic_diff("v1", "v2"))  # v1 rebuilt from its script, v2 read from its IFC
    assert read_json(editor.files.cache_dir / "diff-v1-v2.json")["changed"]  # the stale cached diff was replaced
    check_width_change(editor.semantic_diff("v1", "v2"))


def test_versions_without_geometry_and_no_sandbox_give_no_false_change(editor, data_dir):
    width_change_versions(editor)
    age_versions(editor)
    broken = Editor(data_dir, Sandbox(SandboxLimits(bwrap="/missing/bwrap")), MODEL_ID)
    diff = broken.semantic_diff("v1", "v2")
    assert diff["changed"] == []  # geometry unknown: neither a crash nor a change
    # nothing computed with unknown geometry is cached: with the sandbox back, the geometry shows
    check_width_change(editor.semantic_diff("v1", "v2"))


# --- where geometry is the content: drawings (DXF) and plans -------------------------------------------------------

DRAWING = (Path(__file__).resolve().parents[2] / "models_app" / "skeletons" / "cad_drawing.py").read_text()


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    sandbox = Sandbox(SandboxLimits(wall_seconds=60))

    def snapshot_of(length: float) -> dict:
        from edit_service.engine.kinds import DXF
        from edit_service.engine.scripts import read_params

        folder = tmp_path_factory.mktemp("drawing")
        dxf, _, _ = sandbox.build(DRAWING, {**read_params(DRAWING), "length": length}, folder, DXF)
        return sandbox.inspect(folder, dxf, kind=DXF)

    return snapshot_of


def test_a_drawing_diff_reports_a_millimetre_and_ignores_float_noise(drawn):
    base = drawn(8.0)
    assert diff_snapshots(base, drawn(8.0)) == {"added": [], "removed": [], "changed": []}
    assert diff_snapshots(base, drawn(8.0 + 1e-12)) == {"added": [], "removed": [], "changed": []}  # rounded to 1e-9
    moved = diff_snapshots(base, drawn(8.001))
    # the east wall moves, the south and north walls and the centred label change: geometry is the drawing's content
    assert sorted(item["guid"] for item in moved["changed"]) == ["label-room", "wall-east", "wall-north", "wall-south"]
    east = next(item for item in moved["changed"] if item["guid"] == "wall-east")
    assert {change["field"] for change in east["changes"]} == {"start", "end"}


def test_a_plan_diff_reports_geometry_edits_within_its_tolerance():
    from plans_app.diff import diff_documents

    room = {"id": "R101", "area": 24.0, "outline": [[0, 0], [6, 0], [6, 4], [0, 4]]}
    # a tool's float noise (here below a micrometre, deepdiff alone reports what exceeds its 1e-15-ish) is no edit
    noisy = {**room, "area": 24.0000000001, "outline": [[0, 0], [6.0000000001, 0], [6, 4], [0, 4]]}
    assert diff_documents({"rooms": [room]}, {"rooms": [noisy]}) == []
    widened = {**room, "area": 24.004, "outline": [[0, 0], [6.001, 0], [6.001, 4], [0, 4]]}
    assert [change["path"] for change in diff_documents({"rooms": [room]}, {"rooms": [widened]})] == [
        "$.rooms[R101].area", "$.rooms[R101].outline[1][0]", "$.rooms[R101].outline[2][0]"]
