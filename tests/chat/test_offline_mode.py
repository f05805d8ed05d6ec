"""The chat without a language model (empty llmAPIKey), on the real processes: an ordinary message gets the note
that no language model is configured and how to set one, and changes nothing; the demonstration, asked for by
name ("demo"), works on a copy of the model and leaves the model itself as it was, also when the user refuses."""

import hashlib
import sqlite3

import pytest

from tests.e2e.stack import Stack
from tests.sse import SSEStream
from tests.helpers import ok

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    running = Stack(tmp_path_factory.mktemp("offline"), workers=1).start()
    yield running
    running.stop()


@pytest.fixture
def project(stack):
    created = ok(stack.api("POST", "/api/v1/chat/projects", json={"kind": "ifc", "title": "Haus"}))
    model_id = created["models"][0]
    assert stack.wait_model(model_id)["status"] == "ready"
    session = ok(stack.api("POST", "/api/v1/chat/sessions", json={"projectId": created["projectId"]}))
    assert session["languageModel"] is False  # what the web client reads to say so before anything is sent
    sse = SSEStream(f"{stack.url}/api/v1/chat/sessions/{session['chatSessionId']}/events").start()
    sse.wait_event("session.status")
    yield {"project_id": created["projectId"], "model_id": model_id, "cid": session["chatSessionId"], "sse": sse}
    sse.close()


def model_state(stack, model_id) -> dict:
    """Everything a change would touch: the model's files (name -> digest), versions, script state and PARAMS."""
    folder = stack.data_dir / "models" / model_id
    files = {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}
    script = ok(stack.api("GET", f"/api/v1/models/{model_id}/script"))
    return {
        "files": files,
        "versions": ok(stack.api("GET", f"/api/v1/models/{model_id}/edit/versions")),
        "script": {k: script[k] for k in ("script", "source", "version", "staging")},
        "params": ok(stack.api("GET", f"/api/v1/models/{model_id}/script/params")),
        "model": ok(stack.api("GET", f"/api/v1/models/{model_id}")),
    }


def project_models(stack, project_id) -> list[str]:
    with sqlite3.connect(stack.data_dir / "viewer.sqlite3") as database:
        rows = database.execute("SELECT model_id FROM models_app_projectmodel WHERE project_id = ? ORDER BY id", (project_id,)).fetchall()
    return [row[0] for row in rows]


def say(stack, project, text):
    ok(stack.api("POST", f"/api/v1/chat/sessions/{project['cid']}/messages", json={"text": text}))


def tool_parts(stack, cid) -> list[dict]:
    return [p for m in ok(stack.api("GET", f"/api/v1/chat/sessions/{cid}/messages")) for p in m["parts"] if p["type"] == "tool"]


def answer(stack, project, after, reply):
    ask = project["sse"].wait_event("question.ask", after=after, timeout=180)
    ok(stack.api("POST", f"/api/v1/chat/sessions/{project['cid']}/answer", json={"interruptId": ask.data["interruptId"], "answer": reply}))
    return ask


def test_a_message_gets_how_to_configure_and_changes_nothing(stack, project):
    model_id, sse = project["model_id"], project["sse"]
    before = model_state(stack, model_id)
    say(stack, project, "Make the house three storeys and save it")
    idle = sse.wait_event("session.idle", timeout=120)
    messages = ok(stack.api("GET", f"/api/v1/chat/sessions/{project['cid']}/messages"))
    assert [m["info"]["role"] for m in messages] == ["user", "assistant"]
    text = "".join(p.get("text", "") for p in messages[1]["parts"] if p["type"] == "text")
    assert "No language model is configured" in text
    assert all(key in text for key in ("server_config.json", "llmAPIKey", "llmBaseURL", "llmModel", "demo"))
    assert tool_parts(stack, project["cid"]) == []
    events = [f.event for f in sse.frames if (f.id or 0) <= idle.id]
    assert not {"question.ask", "viewer.staged", "viewer.committed", "model.created"} & set(events)
    assert model_state(stack, model_id) == before
    assert project_models(stack, project["project_id"]) == [model_id]


def test_the_demo_by_name_works_on_a_copy_and_leaves_the_model_untouched(stack, project):
    model_id, sse = project["model_id"], project["sse"]
    before = model_state(stack, model_id)
    # refused at once: nothing is copied
    say(stack, project, "demo")
    first = answer(stack, project, None, "reject: not now")
    assert first.data["permission"] == {"tool": "demo_copy", "input": {}}
    ended = sse.wait_event("session.idle", after=first.id, timeout=120)
    assert project_models(stack, project["project_id"]) == [model_id]
    # allowed: the copy is built, changed, run and saved; the model itself stays as it was
    say(stack, project, "Run the demo")
    copying = answer(stack, project, ended.id, "once")
    assert copying.data["permission"]["tool"] == "demo_copy"
    copy_id = sse.wait_event("model.created", after=copying.id, timeout=180).data["modelId"]
    assert copy_id != model_id
    saving = answer(stack, project, copying.id, "once")
    assert saving.data["permission"] == {"tool": "save_version", "input": {"modelId": copy_id, "note": "offline demo"}}
    sse.wait_event("session.idle", after=saving.id, timeout=180)
    staged = next(f for f in sse.frames if f.event == "viewer.staged" and (f.id or 0) > copying.id)
    assert staged.data["modelId"] == copy_id and staged.data["semanticDiff"]["added"] > 0  # one more storey, on the copy
    committed = next(f for f in sse.frames if f.event == "viewer.committed" and (f.id or 0) > copying.id)
    assert (committed.data["modelId"], committed.data["version"]) == (copy_id, "v2")
    assert ok(stack.api("GET", f"/api/v1/models/{copy_id}/script/params"))["storeys"] == before["params"]["storeys"] + 1
    assert {p["state"].get("input", {}).get("modelId") for p in tool_parts(stack, project["cid"]) if p["tool"] in ("get_params", "set_params", "run_script", "save_version")} == {copy_id}
    assert project_models(stack, project["project_id"]) == [model_id, copy_id]
    after = model_state(stack, model_id)
    assert after == before, "the demonstration changed the model itself"
    # refused before saving: the copy keeps its staged change, the model itself is still as it was
    say(stack, project, "demo")
    again = answer(stack, project, saving.id, "once")
    second_copy = sse.wait_event("model.created", after=again.id, timeout=180).data["modelId"]
    refused = answer(stack, project, again.id, "reject")
    assert refused.data["permission"]["tool"] == "save_version"
    sse.wait_event("session.idle", after=refused.id, timeout=180)
    assert ok(stack.api("GET", f"/api/v1/models/{second_copy}/script"))["source"] == "staging"
    assert model_state(stack, model_id) == before
