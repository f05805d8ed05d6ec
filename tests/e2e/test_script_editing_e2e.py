"""Script editing through the gateway with real gateway, workers and edit service processes."""

import threading
import time

import pytest

from edit_service.sandbox.script_lib import guid_for
from tests.e2e.stack import running_stack
from tests.edit_service.conftest import example
from tests.helpers import MINIMAL_IFC, ok, xkt_entity_ids

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(module_stack):
    """One stack for the module: each test makes its own model (the one that kills the edit service has its own stack)."""
    return module_stack

HOUSE_KEYS_WITH_GEOMETRY = ["slab-ground", "wall-south", "wall-north", "wall-west", "wall-east", "slab-roof", "door-entrance", "window-south-1", "window-south-2"]


def new_model(stack) -> str:
    model_id = ok(stack.api("POST", "/api/v1/models", files={"file": ("start.ifc", MINIMAL_IFC)}))["id"]
    assert stack.wait_model(model_id)["status"] == "ready"
    return model_id


def wait_converted(stack, model_id) -> dict:
    """After a run/save/rollback the model goes converting and back to ready with the new XKT."""
    assert stack.api("GET", f"/api/v1/models/{model_id}").json()["data"]["status"] in ("converting", "ready")
    model = stack.wait_model(model_id)
    assert model["status"] == "ready", model["error"]
    return model


def xkt_ids(stack, model_id) -> set[str]:
    return set(xkt_entity_ids(stack.api("GET", f"/v1/models/{model_id}/model.xkt").content))


def test_stage_run_save_diff_rollback_through_the_gateway(stack):
    model_id = new_model(stack)
    base = f"/api/v1/models/{model_id}"
    staged = ok(stack.api("PUT", f"{base}/script", json={"script": example("small_house")}))
    assert staged["source"] == "staging"

    run = ok(stack.api("POST", f"{base}/script/run"))
    assert run["ok"] and run["elements"] == 13
    assert stack.api("GET", base).json()["data"]["status"] == "converting"
    converted = wait_converted(stack, model_id)
    assert xkt_ids(stack, model_id) == {guid_for(key) for key in HOUSE_KEYS_WITH_GEOMETRY}
    assert converted["size"] == len(stack.api("GET", f"{base}/download?product=current").content) != len(MINIMAL_IFC)
    assert stack.api("GET", f"{base}/download").content == MINIMAL_IFC  # the original, never the unsaved preview

    v1 = ok(stack.api("POST", f"{base}/script/save", json={"note": "first"}))
    assert v1["version"] == "v1" and v1["alignment"]["added"] == 13
    wait_converted(stack, model_id)

    params = ok(stack.api("GET", f"{base}/script/params"))
    ok(stack.api("PUT", f"{base}/script", json={"params": {**params, "fire_rating": "F90", "length": 12.0}}))
    v2 = ok(stack.api("POST", f"{base}/script/save", json={"note": "F90", "author": "ana", "provenance": {"source": "UI"}}))
    # four walls F30 -> F90; length 12 also resizes the long walls and the slab and moves the east wall by 2 m
    assert v2["version"] == "v2" and v2["semanticDiff"] == {"added": 0, "removed": 0, "changed": 6}
    wait_converted(stack, model_id)

    changes = ok(stack.api("GET", f"{base}/changes"))
    fire_ratings = [c for c in changes if c["field"] == "Pset_WallCommon.FireRating"]
    assert {(c["oldValue"], c["newValue"], c["operation"], c["author"]) for c in fire_ratings} == {("F30", "F90", "update", "ana")}
    assert {c["entityId"] for c in fire_ratings} == {guid_for(k) for k in ("wall-south", "wall-north", "wall-west", "wall-east")}
    assert {c["field"] for c in changes} == {"Pset_WallCommon.FireRating", "placement", "shape"}

    diff = ok(stack.api("POST", f"{base}/edit/diff", json={"base": "v1", "target": "v2"}))
    assert len(diff["changed"]) == 6 and diff["added"] == [] and diff["removed"] == []
    script_diff = ok(stack.api("POST", f"{base}/script/diff", json={"base": "v1", "target": "v2"}))
    assert set(script_diff["params"]["changed"]) == {"fire_rating", "length"}
    versions = ok(stack.api("GET", f"{base}/edit/versions"))
    assert [v["version"] for v in versions["versions"]] == ["v1", "v2"] and versions["current"] == "v2"

    rolled = ok(stack.api("POST", f"{base}/script/rollback", json={"version": "v1"}))
    assert rolled["rolledBackTo"] == "v1" and rolled["semanticDiff"]["changed"] == 6
    wait_converted(stack, model_id)
    assert xkt_ids(stack, model_id) == {guid_for(key) for key in HOUSE_KEYS_WITH_GEOMETRY}
    assert ok(stack.api("GET", f"{base}/script/params"))["fire_rating"] == "F30"
    assert len(ok(stack.api("GET", f"{base}/edit/history"))) == 6  # one entry per changed element of v2

    bad = stack.api("POST", f"{base}/script/rollback", json={"version": "v9"}).json()
    assert bad["code"] == 40400
    invalid = stack.api("POST", f"{base}/script/rollback", json={"version": "9"}).json()
    assert invalid["code"] == 40001 and invalid["message"].startswith("version:")


def test_overrides_migrate_with_one_success_and_one_failure(stack):
    model_id = new_model(stack)
    base = f"/api/v1/models/{model_id}"
    ok(stack.api("PUT", f"{base}/script", json={"script": example("small_house")}))
    ok(stack.api("POST", f"{base}/script/save", json={"note": "v1"}))
    door, window = guid_for("door-entrance"), guid_for("window-south-1")
    ok(stack.api("PUT", f"{base}/entities/{door}/properties", json={"entityName": "Entrance door", "fields": {"Name": "Front door"}}))
    ok(stack.api("PUT", f"{base}/entities/{window}/properties", json={"entityName": "South window 1", "fields": {"Name": "Kitchen window"}}))
    wait_converted(stack, model_id)

    result = ok(stack.api("POST", f"{base}/overrides/migrate"))
    assert result["migrated"] == [{"entityId": door, "field": "Name", "value": "Front door"}]
    assert [(f["entityId"], f["field"]) for f in result["failed"]] == [(window, "Name")]
    assert "traced" in result["failed"][0]["reason"]
    assert result["version"] == "v2"
    assert ok(stack.api("GET", f"{base}/overrides")) == {window: {"Name": "Kitchen window"}}
    migrate_entries = [c for c in ok(stack.api("GET", f"{base}/changes")) if c["operation"] == "migrate"]
    assert [(c["entityId"], c["field"], c["newValue"]) for c in migrate_entries] == [(door, "Name", "Front door")]
    assert 'Name="Front door"' in ok(stack.api("GET", f"{base}/script"))["script"]
    model = wait_converted(stack, model_id)
    metadata = stack.api("GET", f"/v1/models/{model_id}/metadata.json").json()
    assert next(o for o in metadata["metaObjects"] if o["id"] == door)["name"] == "Front door"
    assert model["status"] == "ready"


def test_parallel_runs_and_saves_are_serialised(stack):
    model_id = new_model(stack)
    base = f"/api/v1/models/{model_id}"
    ok(stack.api("PUT", f"{base}/script", json={"script": example("small_house")}))
    answers = []

    def call(path):
        answers.append(stack.api("POST", f"{base}/script/{path}", json={}).json())

    threads = [threading.Thread(target=call, args=(path,)) for path in ("run", "save", "run", "save", "run")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # one at a time per model: once a save consumed the staging, later runs and saves find nothing staged
    assert all(a["code"] == 0 or (a["code"] == 40001 and "nothing is staged" in a["message"]) for a in answers), answers
    assert any(a["code"] == 0 and a["data"].get("version") == "v1" for a in answers)
    versions = ok(stack.api("GET", f"{base}/edit/versions"))["versions"]
    assert [v["version"] for v in versions] == ["v1"]
    assert ok(stack.api("POST", f"{base}/edit/diff", json={"base": "v1", "target": "current"}))["changed"] == []
    wait_converted(stack, model_id)


def test_edit_service_down_gives_50200_and_changes_nothing(tmp_path):
    with running_stack(tmp_path) as stack:  # its own: the module's stack keeps its edit service
        model_id = new_model(stack)
        stack.kill("edit")
        started = time.monotonic()
        response = stack.api("POST", f"/api/v1/models/{model_id}/script/run")
        assert response.status_code == 502 and response.json()["code"] == 50200
        assert time.monotonic() - started < 5
        assert stack.api("GET", f"/api/v1/models/{model_id}").json()["data"]["status"] == "ready"
