"""cad and cad->ifc projects on the real processes: the agent (real OpenAI client, fake server) creates the drawing
with init_model, edits it like any build script, and a cad->ifc project turns the drawing's walls into an IFC model
converted to XKT whose walls keep GlobalIds derived from the drawing's keys."""

import pytest

from edit_service.sandbox.script_lib import guid_for
from tests.e2e.stack import Stack
from tests.fake_openai import FakeOpenAI, Reply
from tests.sse import SSEStream

pytestmark = pytest.mark.e2e


def ok(response):
    body = response.json()
    assert body["code"] == 0, body
    return body["data"]


@pytest.fixture(scope="module")
def fake():
    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture(scope="module")
def cad_stack(tmp_path_factory, fake):
    config = {"llmAPIKey": "test-key", "llmBaseURL": fake.url, "llmModel": "fake-model"}
    running = Stack(tmp_path_factory.mktemp("cad"), workers=1, config=config).start()
    yield running
    running.stop()


def open_project(stack, kind):
    project = ok(stack.api("POST", "/api/v1/chat/projects", json={"kind": kind, "title": "Plan"}))
    assert project["models"] == []  # cad projects start blank
    session = ok(stack.api("POST", "/api/v1/chat/sessions", json={"projectId": project["projectId"]}))
    sse = SSEStream(f"{stack.url}/api/v1/chat/sessions/{session['chatSessionId']}/events").start()
    sse.wait_event("session.status")
    return project, session["chatSessionId"], sse


def turn(stack, fake, sse, cid, *replies):
    fake.script(*replies)
    last = sse.frames[-1].id if sse.frames else None
    ok(stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": "go"}))
    return sse.wait_event("session.idle", after=last, timeout=180)


def test_a_cad_project_draws_edits_and_previews_in_2d(cad_stack, fake):
    project, cid, sse = open_project(cad_stack, "cad")
    try:
        turn(cad_stack, fake, sse, cid, Reply().tool("init_model", {"title": "Flat"}), Reply().text("Drawing created."))
        created = sse.wait_event("model.created")
        model_id = created.data["modelId"]
        assert {k: created.data[k] for k in ("kind", "title", "projectId", "sessionID")} == {"kind": "dxf", "title": "Flat.dxf", "projectId": project["projectId"], "sessionID": cid}
        model = ok(cad_stack.api("GET", f"/api/v1/models/{model_id}"))
        assert (model["status"], model["format"]) == ("ready", "dxf")
        (session,) = [s for s in ok(cad_stack.api("GET", "/api/v1/chat/sessions")) if s["chatSessionId"] == cid]
        assert session["modelId"] == model_id  # bound to the session

        render = cad_stack.api("GET", f"/v1/models/{model_id}/render.json")
        assert render.status_code == 200 and render.headers.get("ETag")
        walls = {e["key"]: e for e in render.json()["entities"] if e["key"] and e["key"].startswith("wall-")}
        assert walls["wall-south"]["end"] == [8.0, 0.0]
        partial = cad_stack.api("GET", f"/v1/models/{model_id}/render.json", headers={"Range": "bytes=0-9"})
        assert partial.status_code == 206 and len(partial.content) == 10

        params = ok(cad_stack.api("GET", f"/api/v1/models/{model_id}/script/params"))
        turn(cad_stack, fake, sse, cid, Reply().tool("set_params", {"params": {**params, "length": 12.0}}), Reply().tool("run_script", {}), Reply().tool("save_version", {"note": "longer"}), Reply().text("Done."))
        staged = sse.wait_event("viewer.staged")
        assert staged.data["kind"] == "dxf" and staged.data["semanticDiff"]["changed"] >= 2
        assert sse.wait_event("viewer.committed").data["version"] == "v2"
        walls = {e["key"]: e for e in cad_stack.api("GET", f"/v1/models/{model_id}/render.json").json()["entities"] if e["key"]}
        assert walls["wall-south"]["end"] == [12.0, 0.0]
        diff = ok(cad_stack.api("POST", f"/api/v1/models/{model_id}/edit/diff", json={"base": "v1", "target": "v2"}))
        assert "wall-south" in [item["guid"] for item in diff["changed"]]
        download = cad_stack.api("GET", f"/api/v1/models/{model_id}/download")
        assert download.status_code == 200 and b"SCRIPTLIB" in download.content
        # an IFC model has no 2D preview; a second drawing is refused
        turn(cad_stack, fake, sse, cid, Reply().tool("init_model", {}), Reply().text("No."))
        failed = [f.data["part"] for f in sse.frames if f.event == "message.part.updated" and f.data["part"].get("tool") == "init_model" and f.data["part"]["state"]["status"] == "error"]
        assert failed and "already has its model" in failed[-1]["state"]["error"]
    finally:
        sse.close()


def test_a_cad_to_ifc_project_turns_drawn_walls_into_ifc_walls(cad_stack, fake):
    project, cid, sse = open_project(cad_stack, "cad->ifc")
    try:
        turn(cad_stack, fake, sse, cid, Reply().tool("init_model", {"title": "House"}), Reply().tool("init_model", {"title": "House"}), Reply().text("Both created."))
        created = [f.data for f in sse.frames if f.event == "model.created"]
        assert [c["kind"] for c in created] == ["dxf", "ifc"]
        drawing_id, building_id = created[0]["modelId"], created[1]["modelId"]
        assert cad_stack.api("GET", f"/v1/models/{building_id}/render.json").json()["code"] == 40400
        assert cad_stack.wait_model(building_id)["status"] == "ready"
        metadata = cad_stack.api("GET", f"/v1/models/{building_id}/metadata.json").json()
        walls = {o["id"]: o for o in metadata["metaObjects"] if o["type"].startswith("IfcWall")}
        assert set(walls) == {guid_for(f"wall:wall-{side}") for side in ("south", "east", "north", "west")}
        assert cad_stack.api("GET", f"/v1/models/{building_id}/model.xkt").status_code == 200
        params = ok(cad_stack.api("GET", f"/api/v1/models/{building_id}/script/params"))
        assert params["source"] == {"model": drawing_id, "version": "v1"}
    finally:
        sse.close()
