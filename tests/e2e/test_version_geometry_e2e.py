"""A saved version's geometry on the real processes (gateway with a token, two conversion workers, edit
service): a script model saved as v1 and as v2 without one element; v1's geometry is converted on request from the
IFC the edit service rebuilds, and holds the removed element, which the current XKT lacks. A version conversion
killed with its worker is finished after the workers restart."""

from __future__ import annotations

import json

import pytest
import requests

from tests.e2e.stack import Stack
from tests.edit_service.conftest import example
from tests.gateway.test_version_geometry import SCRIPT
from tests.helpers import MINIMAL_IFC, poll, xkt_entity_ids

pytestmark = pytest.mark.e2e

TOKEN = "versions-token"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    running = Stack(tmp_path_factory.mktemp("version-geometry"), token=TOKEN, workers=2).start()
    yield running
    running.stop()


def data(response: requests.Response):
    body = response.json()
    assert body["code"] == 0, body
    return body["data"]


def scripted_model(stack: Stack, script: str, versions: list[dict]) -> str:
    """A model whose build script is saved once per entry of `versions`: the script as it is, then with the entry's
    PARAMS changes."""
    model_id = data(stack.api("POST", "/api/v1/models", files={"file": ("start.ifc", MINIMAL_IFC)}))["id"]
    stack.wait_model(model_id)
    for number, params in enumerate(versions, start=1):
        if number == 1:
            data(stack.api("PUT", f"/api/v1/models/{model_id}/script", json={"script": script}))
        else:
            saved = data(stack.api("GET", f"/api/v1/models/{model_id}/script/params"))
            data(stack.api("PUT", f"/api/v1/models/{model_id}/script", json={"params": {**saved, **params}}))
        assert data(stack.api("POST", f"/api/v1/models/{model_id}/script/save", json={"note": f"v{number}"}))["version"] == f"v{number}"
    assert stack.wait_model(model_id, until=("ready", "failed"))["status"] == "ready"
    return model_id


def wait_geometry(stack: Stack, model_id: str, version: str, until=("ready", "failed"), timeout: float = 300) -> dict:
    return poll(lambda: data(stack.api("GET", f"/api/v1/models/{model_id}/versions/{version}/geometry")), lambda state: state["status"] in until, timeout)


def test_a_removed_element_is_in_its_base_versions_geometry(stack):
    model_id = scripted_model(stack, SCRIPT, [{}, {"with_column": False}])
    diff = data(stack.api("POST", f"/api/v1/models/{model_id}/edit/diff", json={"base": "v1", "target": "v2"}))
    (column,) = diff["removed"]
    anonymous = requests.Session()  # the geometry loader sends no token
    current = anonymous.get(f"{stack.url}/v1/models/{model_id}/model.xkt", timeout=30)
    assert current.status_code == 200 and column not in xkt_entity_ids(current.content)
    missing = anonymous.get(f"{stack.url}/v1/models/{model_id}/versions/v1/model.xkt", timeout=30).json()
    assert missing["code"] == 40400

    requested = data(stack.api("POST", f"/api/v1/models/{model_id}/versions/v1/geometry"))
    assert requested["version"] == "v1" and requested["status"] in ("queued", "converting")
    state = wait_geometry(stack, model_id, "v1")
    assert state == {"version": "v1", "status": "ready", "progress": None, "error": ""}

    xkt = anonymous.get(f"{stack.url}/v1/models/{model_id}/versions/v1/model.xkt", timeout=30)
    assert xkt.status_code == 200 and xkt.headers["ETag"]
    assert column in xkt_entity_ids(xkt.content)
    assert anonymous.get(xkt.url, headers={"If-None-Match": xkt.headers["ETag"]}, timeout=30).status_code == 304
    metadata = anonymous.get(f"{stack.url}/v1/models/{model_id}/versions/v1/metadata.json", timeout=30)
    assert metadata.status_code == 200
    meta_objects = {o["id"]: o for o in json.loads(metadata.content)["metaObjects"]}
    assert (meta_objects[column]["type"], meta_objects[column]["name"]) == ("IfcColumn", "Column")
    assert data(stack.api("POST", f"/api/v1/models/{model_id}/versions/v1/geometry")) == state  # never converted again
    assert anonymous.post(f"{stack.url}/api/v1/models/{model_id}/versions/v1/geometry", timeout=30).json()["code"] == 40100

    assert data(stack.api("DELETE", f"/api/v1/models/{model_id}")) is None
    assert anonymous.get(xkt.url, timeout=30).json()["code"] == 40400
    assert data(stack.api("DELETE", f"/api/v1/trash/{model_id}")) is None  # the purge
    assert not (stack.data_dir / "models" / model_id).exists()
    assert stack.count_rows({"models_app_versiongeometry": f"model_id = '{model_id}'"}) == {"models_app_versiongeometry": 0}


def test_a_version_conversion_killed_with_its_workers_is_finished_after_they_restart(stack):
    params = {"storeys": 12, "bays_x": 6, "bays_y": 6}
    model_id = scripted_model(stack, example("tower"), [{}, {**params, "name": "Tower v2"}, {**params, "storeys": 2}])
    data(stack.api("POST", f"/api/v1/models/{model_id}/versions/v2/geometry"))
    wait_geometry(stack, model_id, "v2", until=("converting", "ready", "failed"))
    stack.kill_workers()
    assert data(stack.api("GET", f"/api/v1/models/{model_id}/versions/v2/geometry"))["status"] == "converting"

    stack.start_workers()
    state = wait_geometry(stack, model_id, "v2")
    assert state["status"] == "ready", state["error"]
    entity_ids = xkt_entity_ids(stack.api("GET", f"/v1/models/{model_id}/versions/v2/model.xkt").content)
    current_ids = xkt_entity_ids(stack.api("GET", f"/v1/models/{model_id}/model.xkt").content)
    assert len(entity_ids) > 5 * len(current_ids) > 0  # twelve storeys against the current two
    leftovers = [p.name for p in (stack.data_dir / "models" / model_id / "versions").iterdir()]
    assert leftovers == ["v2"]
