"""Script map origins, locate and edit-call on literal, params and traced call sites, stale maps, undo, 409/422."""

import pytest

from edit_service.engine.errors import Conflict, Invalid, RunFailed
from edit_service.engine.store import read_json
from edit_service.sandbox.script_lib import guid_for
from tests.edit_service.conftest import MODEL_ID, example


@pytest.fixture
def house(editor):
    editor.stage(script=example("small_house"))
    editor.run()
    return editor


def state(editor, data_dir):
    folder = data_dir / "models" / MODEL_ID
    return (folder / "model.ifc").read_bytes(), editor.files.staging.read_bytes(), editor.files.current_map.read_bytes()


def test_map_origins(house):
    envelope = read_json(house.files.current_map)
    assert envelope["scriptHash"] == house.script_state()["scriptHash"]
    origins = {key: entry["origin"] for key, entry in envelope["map"].items()}
    assert origins["door-entrance"] == "literal"
    assert origins["wall-north"] == "params"  # height=params["wall_height"]
    assert origins["window-south-1"] == origins["window-south-2"] == "traced"  # created in a loop
    entry = envelope["map"]["wall-north"]
    line = example("small_house").splitlines()[entry["line"] - 1]
    assert line[entry["col"]:].startswith("sl.create_entity(") and entry["snippet"] == line.strip()


def test_locate(house):
    found = house.locate(guid_for("door-entrance"))
    assert (found["found"], found["designKey"], found["origin"], found["stale"]) == (True, "door-entrance", "literal", False)
    assert house.locate("0000000000000000000000") == {"found": False, "guid": "0000000000000000000000", "stale": False}


def test_locate_reports_stale_after_unrun_staging_and_undo(house):
    house.stage(params={**house.params(), "name": "other"})
    assert house.locate(guid_for("door-entrance"))["stale"] is True
    house.undo()
    assert house.locate(guid_for("door-entrance"))["stale"] is False  # back at the script that made the map


def test_edit_call_on_a_literal_rewrites_exactly_that_argument(house, data_dir):
    original = house.current_script()[0]
    result = house.edit_call("door-entrance", "Name", "Front door")
    assert result["semanticDiff"] == {"added": 0, "removed": 0, "changed": 1}
    rewritten = house.current_script()[0]
    assert rewritten == original.replace('Name="Entrance door"', 'Name="Front door"')
    assert house.locate(guid_for("door-entrance"))["stale"] is False  # the map follows the run
    assert b"'Front door'" in (data_dir / "models" / MODEL_ID / "model.ifc").read_bytes()
    house.undo()
    assert house.current_script()[0] == original


def test_edit_call_on_a_number(house):
    original = house.current_script()[0]
    house.edit_call("door-entrance", "height", 2.3)
    assert house.current_script()[0] == original.replace("width=1.0, depth=0.1, height=2.1", "width=1.0, depth=0.1, height=2.3")


def test_edit_call_on_a_params_reference_rewrites_the_params_entry(house):
    original = house.current_script()[0]
    house.edit_call("wall-north", "height", 3.4)
    assert house.current_script()[0] == original.replace('"wall_height": 3.0,', '"wall_height": 3.4,')
    assert house.params()["wall_height"] == 3.4


@pytest.mark.parametrize(
    "key, argument, value, message",
    [
        ("window-south-1", "Name", "W", "traced"),
        ("door-entrance", "Colour", "red", "no argument 'Colour'"),
        ("door-entrance", "psets", "x", "structural"),
        ("wall-north", "y", 1.0, "computed"),
        ("door-entrance", "Name", ["a"], "scalar"),
        ("door-entrance", "Name", None, "scalar"),
        ("no-such-key", "Name", "x", "not in the script map"),
    ],
)
def test_edit_call_refusals_have_no_side_effect(house, data_dir, key, argument, value, message):
    before = state(house, data_dir)
    with pytest.raises(Invalid, match=message):
        house.edit_call(key, argument, value)
    assert state(house, data_dir) == before


def test_edit_call_whose_run_fails_has_no_side_effect(house, data_dir):
    before = state(house, data_dir)
    with pytest.raises(RunFailed, match="could not convert string to float"):
        house.edit_call("door-entrance", "height", "tall")
    assert state(house, data_dir) == before


@pytest.mark.parametrize("diverge", ["unrun staging", "undo", "old map"])
def test_edit_call_refuses_a_diverged_map_with_409(house, data_dir, diverge):
    if diverge == "unrun staging":
        house.stage(params={**house.params(), "name": "other"})
    elif diverge == "undo":
        house.edit_call("door-entrance", "Name", "A")
        house.undo()
    else:
        house.stage(script=example("small_house").replace("Entrance door", "Main door"))
    before = state(house, data_dir)
    with pytest.raises(Conflict):
        house.edit_call("door-entrance", "Name", "B")
    assert state(house, data_dir) == before


def test_traced_tower_elements_can_still_be_located(editor):
    editor.stage(script=example("tower"))
    editor.run()
    found = editor.locate(guid_for("wall-1-south-0"))
    assert found["found"] and found["origin"] == "traced" and "create_entity" in found["snippet"]
    lobby = editor.locate(guid_for("door-lobby"))
    assert lobby["origin"] == "params"
    editor.edit_call("door-lobby", "Name", "Main entrance")
    assert editor.params()["lobby_name"] == "Main entrance"
