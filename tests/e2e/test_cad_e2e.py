"""cad and cad->ifc projects on the real processes: the agent (real OpenAI client, fake server) creates the drawing
with init_model, edits it like any build script, and a cad->ifc project turns the drawing's walls into an IFC model
converted to XKT whose walls keep GlobalIds derived from the drawing's keys."""

import time

import pytest

from edit_service.sandbox.script_lib import guid_for
from tests.e2e.stack import Stack
from tests.fake_openai import Reply
from tests.sse import SSEStream
from tests.helpers import ok

pytestmark = pytest.mark.e2e


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


def turn(stack, fake, sse, cid, *replies, allow=True):
    """One turn; its permission requests are answered "once" (or "reject" when allow is False)."""
    fake.script(*replies)
    last = sse.frames[-1].id if sse.frames else None
    ok(stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": "go"}))
    while True:
        frame = sse.wait_for(lambda f: (f.id or 0) > (last or 0) and f.event in ("question.ask", "session.idle"), timeout=180)  # noqa: B023 - called in this iteration
        if frame.event == "session.idle":
            return frame
        last = frame.id
        ok(stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={"interruptId": frame.data["interruptId"], "answer": "once" if allow else "reject"}))


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
        # a drawing of another project is no source, wherever the script comes from
        _, other_cid, other_sse = open_project(cad_stack, "cad")
        try:
            turn(cad_stack, fake, other_sse, other_cid, Reply().tool("init_model", {}), Reply().text("Drawn."))
            foreign = other_sse.wait_event("model.created").data["modelId"]
        finally:
            other_sse.close()
        ok(cad_stack.api("PUT", f"/api/v1/models/{building_id}/script", json={"params": {**params, "source": {"model": foreign, "version": "v1"}}}))
        refused = cad_stack.api("POST", f"/api/v1/models/{building_id}/script/run")
        assert (refused.status_code, refused.json()["code"]) == (400, 40001) and "not a drawing of this model's project" in refused.json()["message"]
        ok(cad_stack.api("POST", f"/api/v1/models/{building_id}/script/discard"))
    finally:
        sse.close()


SLEEPING_DRAWING = '''import time
import dxf_lib as dl

PARAMS = {"seconds": 20}


def build(params, out_path):
    time.sleep(params["seconds"])
    doc = dl.new_doc()
    dl.create_entity(doc, "LINE", "wall", x1=0.0, y1=0.0, x2=1.0, y2=0.0)
    dl.save(doc, out_path)
'''


def test_abort_during_init_model_commits_nothing(cad_stack, fake):
    project, cid, sse = open_project(cad_stack, "cad")
    before = set((cad_stack.data_dir / "models").iterdir())
    try:
        fake.script(Reply().tool("init_model", {"title": "Slow", "script": SLEEPING_DRAWING}), Reply().text("never"))
        ok(cad_stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": "draw slowly"}))
        ask = sse.wait_event("question.ask", timeout=60)
        ok(cad_stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={"interruptId": ask.data["interruptId"], "answer": "once"}))
        permitted = sse.wait_for(lambda f: f.event == "message.part.updated" and f.data["part"].get("tool") == "init_model" and f.data["part"]["state"]["status"] == "running"
                                 and (f.id or 0) > ask.id, timeout=60)
        assert permitted.data["part"]["state"]["metadata"] == {"permitted": "once"}
        time.sleep(2)  # the sandbox builds the drawing
        assert ok(cad_stack.api("POST", f"/api/v1/chat/sessions/{cid}/abort")) == {"aborted": True}
        sse.wait_event("session.idle", after=ask.id, timeout=10)
        aborted = next(f.data["part"] for f in reversed(sse.frames) if f.event == "message.part.updated" and f.data["part"].get("tool") == "init_model")
        assert aborted["state"]["error"] == "Tool execution aborted" and aborted["state"]["metadata"]["committed"] == []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and set((cad_stack.data_dir / "models").iterdir()) != before:
            time.sleep(0.2)  # the cancelled build ends and its model is taken back
        assert set((cad_stack.data_dir / "models").iterdir()) == before
        assert not [f for f in sse.frames if f.event == "model.created"]
        assert "Slow.dxf" not in [m["name"] for m in ok(cad_stack.api("GET", "/api/v1/models"))]
        session = next(s for s in ok(cad_stack.api("GET", "/api/v1/chat/sessions")) if s["chatSessionId"] == cid)
        assert session["modelId"] == ""
        time.sleep(1)
        assert not [f for f in sse.frames if f.event == "model.created"]  # no late creation either
    finally:
        sse.close()
