"""DXF drawings as build scripts: the same staging, runs, versions, diffs, locate and edit-call as IFC scripts, in
the real sandbox; render.json checked against script-made drawings."""

import json

import pytest

from edit_service.engine.errors import Invalid, RunFailed
from edit_service.engine.kinds import KIND_FILE
from edit_service.engine.workflow import Editor
from tests.edit_service.conftest import MODEL_ID, example

pytestmark = pytest.mark.heavy


@pytest.fixture
def drawing(data_dir, sandbox) -> Editor:
    (data_dir / "models" / MODEL_ID / KIND_FILE).write_text("dxf")
    return Editor(data_dir, sandbox, MODEL_ID)


def render_of(editor) -> dict:
    return json.loads((editor.files.root / "render.json").read_text())


def by_key(render: dict) -> dict:
    return {entity["key"]: entity for entity in render["entities"] if entity["key"]}


def test_run_publishes_the_dxf_and_render_json(drawing):
    drawing.stage(script=example("floor_plan"))
    result = drawing.run()
    assert result["ok"] and result["elements"] == 9
    assert drawing.files.ifc.name == "model.dxf" and drawing.files.ifc.read_bytes().startswith(b"  0\nSECTION")
    render = render_of(drawing)
    assert render["schemaVersion"] == 2
    assert render["bounds"] == {"min": [0.0, 0.0], "max": [10.0, 8.0]}
    assert {layer["name"]: layer["color"] for layer in render["layers"]}["A-WALL"] == 1
    entities = by_key(render)
    assert entities["wall-south"] == {"key": "wall-south", "type": "LINE", "layer": "A-WALL", "handle": entities["wall-south"]["handle"], "start": [0.0, 0.0], "end": [10.0, 0.0]}
    # the closed polyline is exploded into four LINE segments carrying its key
    segments = [e for e in render["entities"] if e["key"] == "room-living"]
    assert [e["type"] for e in segments] == ["LINE"] * 4
    # the INSERT is expanded one level: its block's LINE and ARC follow it with key null and parent = its handle
    position = render["entities"].index(entities["door-1"])
    door = entities["door-1"]
    assert (door["block"], door["position"], door["scale"]) == ("DOOR90", [2.0, 0.0], [1.0, 1.0])
    children = render["entities"][position + 1:position + 3]
    assert [(c["type"], c["key"], c["parent"], c["layer"]) for c in children] == [("LINE", None, door["handle"], "A-DOOR"), ("ARC", None, door["handle"], "A-DOOR")]
    assert children[1]["center"] == [2.0, 0.0] and (children[1]["startAngle"], children[1]["endAngle"]) == (0.0, 90.0)
    assert entities["label-living"]["text"] == "Living" and entities["label-living"]["position"] == [3.0, 4.0]
    assert render["unsupported"] == []


def test_same_script_same_bytes(drawing):
    drawing.stage(script=example("floor_plan"))
    drawing.run()
    first = drawing.files.ifc.read_bytes()
    drawing.stage(params={**drawing.params(), "length": 12.0})
    drawing.run()
    drawing.undo()
    drawing.run()
    assert drawing.files.ifc.read_bytes() == first


def test_save_diff_rollback_and_discard_keep_render_json_with_the_product(drawing):
    drawing.stage(script=example("floor_plan"))
    assert drawing.save(note="first")["version"] == "v1"
    drawing.stage(params={**drawing.params(), "length": 12.0})
    saved = drawing.save(note="longer")
    changed = {item["guid"]: {c["field"]: (c["old"], c["new"]) for c in item["changes"]} for item in saved["diff"]["changed"]}
    assert changed["wall-south"]["end"] == ("[10.0, 0.0]", "[12.0, 0.0]")
    assert set(changed) == {"wall-south", "wall-east", "wall-north"}
    assert by_key(render_of(drawing))["wall-south"]["end"] == [12.0, 0.0]
    drawing.rollback("v1")
    assert by_key(render_of(drawing))["wall-south"]["end"] == [10.0, 0.0]
    drawing.discard()
    assert by_key(render_of(drawing))["wall-south"]["end"] == [12.0, 0.0]
    assert [item["guid"] for item in drawing.semantic_diff("v1", "v2")["changed"]] == ["wall-east", "wall-north", "wall-south"]


def test_locate_and_edit_call_on_a_drawing(drawing):
    drawing.stage(script=example("floor_plan"))
    drawing.save()
    located = drawing.locate("label-living")
    assert located["found"] and located["designKey"] == "label-living" and "label-living" in located["snippet"]
    result = drawing.edit_call("label-living", "text", "Lounge")
    assert result["ok"]
    assert by_key(render_of(drawing))["label-living"]["text"] == "Lounge"
    assert 'text="Lounge"' in drawing.current_script()[0]


def test_a_drawing_that_breaks_the_contract_changes_nothing(drawing):
    drawing.stage(script=example("floor_plan"))
    drawing.run()
    before = (drawing.files.ifc.read_bytes(), render_of(drawing))
    drawing.stage(script="import dxf_lib as dl\nPARAMS = {}\n\ndef build(params, out_path):\n    doc = dl.new_doc()\n    dl.create_entity(doc, 'LINE', 'a', x1=0, y1=0, x2=1, y2=0)\n    dl.create_entity(doc, 'LINE', 'a', x1=0, y1=0, x2=2, y2=0)\n    dl.save(doc, out_path)\n")
    with pytest.raises(RunFailed, match="used twice"):
        drawing.run()
    drawing.stage(script="import dxf_lib as dl\nPARAMS = {}\n\ndef build(params, out_path):\n    doc = dl.new_doc()\n    dl.create_entity(doc, 'SPLINE', 'a')\n    dl.save(doc, out_path)\n")
    with pytest.raises(RunFailed, match="unsupported entity type"):
        drawing.run()
    assert (drawing.files.ifc.read_bytes(), render_of(drawing)) == before


def test_upload_diff_of_a_drawing_edited_elsewhere(drawing, tmp_path):
    import ezdxf

    drawing.stage(script=example("floor_plan"))
    drawing.run()
    edited = ezdxf.readfile(drawing.files.ifc)
    for entity in edited.modelspace():
        if entity.has_xdata("SCRIPTLIB") and entity.get_xdata("SCRIPTLIB")[0].value == "wall-east":
            entity.dxf.end = (10.0, 9.0)
    edited.modelspace().add_circle((5, 5), 1.0)
    path = tmp_path / "edited.dxf"
    edited.saveas(path)
    diff = drawing.upload_diff(path)
    assert [item["guid"] for item in diff["changed"]] == ["wall-east"]
    assert [guid.startswith("dxf-handle:") for guid in diff["added"]] == [True]
    with pytest.raises(Invalid):
        (tmp_path / "junk.dxf").write_bytes(b"not a drawing")
        drawing.upload_diff(tmp_path / "junk.dxf")


def test_render_json_of_a_foreign_drawing(tmp_path, sandbox):
    """A DXF as another CAD tool writes it: bulged and 2D polylines, a mirrored block with an arc, a nested block,
    an arc with extrusion -Z, and entities outside the whitelist, which are listed, never dropped."""
    import ezdxf

    from edit_service.engine.kinds import DXF

    doc = ezdxf.new("R2010")
    msp = doc.modelspace()
    msp.add_lwpolyline([(0, 0, 0), (4, 0, 1), (4, 4, 0)], format="xyb")  # the bulge 1 makes a half circle
    msp.add_polyline2d([(10, 0), (12, 0), (12, 2)])
    msp.add_arc((2, 0), 1, 0, 90, dxfattribs={"extrusion": (0, 0, -1)})
    inner = doc.blocks.new("INNER")
    inner.add_circle((0, 0), 0.5)
    block = doc.blocks.new("WINDOW", base_point=(0, 0))
    block.add_arc((0, 0), 1, 0, 90)
    block.add_line((0, 0), (1, 0), dxfattribs={"layer": "0"})
    block.add_blockref("INNER", (0, 0))
    msp.add_blockref("WINDOW", (20, 0), dxfattribs={"xscale": -1, "layer": "A-GLAZ"})
    msp.add_spline([(0, 10), (2, 12), (4, 10), (6, 12)])
    msp.add_ellipse((30, 0), major_axis=(2, 0), ratio=0.5)
    msp.add_text("Room", dxfattribs={"insert": (1, 1), "height": 0.2})
    path = tmp_path / "foreign.dxf"
    doc.saveas(path)

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    snapshot, extras = sandbox.inspect_with_outputs(run_dir, path, validate=False, kind=DXF)
    render = json.loads(extras["render.json"].read_text())
    types = [e["type"] for e in render["entities"]]
    assert all(e["key"] is None for e in render["entities"])  # no SCRIPTLIB keys in a foreign file
    assert "LWPOLYLINE" not in types and "POLYLINE" not in types and "SPLINE" not in types
    bulge_arc = next(e for e in render["entities"] if e["type"] == "ARC" and e["center"] == [4.0, 2.0])
    assert bulge_arc["radius"] == 2.0 and all(0 <= e[k] < 360 for e in render["entities"] if e["type"] == "ARC" for k in ("startAngle", "endAngle"))
    mirrored = next(e for e in render["entities"] if e["type"] == "ARC" and e["radius"] == 1.0 and "parent" not in e)
    assert mirrored["center"] == [-2.0, 0.0] and (mirrored["startAngle"], mirrored["endAngle"]) == (90.0, 180.0)
    insert = next(e for e in render["entities"] if e["type"] == "INSERT")
    children = [e for e in render["entities"] if e.get("parent") == insert["handle"]]
    assert {c["type"] for c in children} == {"ARC", "LINE"} and all(c["layer"] == "A-GLAZ" for c in children)
    window_arc = next(c for c in children if c["type"] == "ARC")
    assert window_arc["center"] == [20.0, 0.0] and (window_arc["startAngle"], window_arc["endAngle"]) == (90.0, 180.0)
    unsupported = {item["type"]: item for item in render["unsupported"]}
    assert set(unsupported) == {"INSERT", "SPLINE", "ELLIPSE"}  # the nested INSERT is one level too deep
    assert unsupported["INSERT"]["handle"] == insert["handle"]
    assert len(unsupported["SPLINE"]["coords"]) > 4 and len(unsupported["ELLIPSE"]["coords"]) > 4
    assert render["bounds"]["max"][0] >= 32.0 - 1e-9 and render["bounds"]["max"][1] >= 12.0 - 1e-9
    assert len(snapshot) == 7 and all(key.startswith("dxf-handle:") for key in snapshot)
    by_class = {element["class"]: element["attributes"] for element in snapshot.values()}
    assert json.loads(by_class["POLYLINE"]["points"]) == [[10.0, 0.0], [12.0, 0.0], [12.0, 2.0]]
    assert len(json.loads(by_class["SPLINE"]["outline"])) > 4  # outside the whitelist, still diffable


def test_render_json_bounds_are_null_for_an_empty_drawing(drawing):
    drawing.stage(script="import dxf_lib as dl\nPARAMS = {}\n\ndef build(params, out_path):\n    dl.save(dl.new_doc(), out_path)\n")
    drawing.run()
    assert render_of(drawing)["bounds"] is None and render_of(drawing)["entities"] == []
