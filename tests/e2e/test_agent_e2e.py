"""The chat agent on the real processes with the real OpenAI client, against a local fake OpenAI-compatible server
that streams scripted completions (split tool-call arguments, pauses, holds, errors)."""

import json
import signal
import time

import psutil
import pytest

from tests.e2e.stack import Stack
from tests.fake_openai import FakeOpenAI, Reply
from tests.plans.test_plan_files import PLAN, SUPPLEMENT
from tests.sse import SSEStream

pytestmark = pytest.mark.e2e

ASK = "make the house two storeys and set every external wall to fire rating F90"
SLEEPING_SCRIPT = '''import time
import script_lib as sl

PARAMS = {"seconds": 20}


def build(params, out_path):
    time.sleep(params["seconds"])
    model = sl.new_model("slow")
    sl.save(model, out_path)
'''


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
def agent_stack(tmp_path_factory, fake):
    config = {"llmAPIKey": "test-key", "llmBaseURL": fake.url, "llmModel": "fake-model"}
    running = Stack(tmp_path_factory.mktemp("agent"), workers=1, config=config).start()
    yield running
    running.stop()


@pytest.fixture
def project(agent_stack, fake):
    fake.replies.clear()
    fake.requests.clear()
    fake.released.clear()
    created = ok(agent_stack.api("POST", "/api/v1/chat/projects", json={"kind": "ifc", "title": "Haus"}))
    model_id = created["models"][0]
    assert agent_stack.wait_model(model_id)["status"] == "ready"
    session = ok(agent_stack.api("POST", "/api/v1/chat/sessions", json={"projectId": created["projectId"]}))
    sse = SSEStream(f"{agent_stack.url}/api/v1/chat/sessions/{session['chatSessionId']}/events").start()
    sse.wait_event("session.status")
    yield {"cid": session["chatSessionId"], "model_id": model_id, "sse": sse, "project_id": created["projectId"]}
    sse.close()


def bwrap_running() -> bool:
    return any(p.info["name"] == "bwrap" for p in psutil.process_iter(["name"]))  # info: no race with exiting processes


def say(stack, cid, text):
    ok(stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": text}))


def tool_parts(sse, status=None):
    parts = [f.data["part"] for f in sse.frames if f.event == "message.part.updated" and f.data["part"]["type"] == "tool"]
    return [p for p in parts if status is None or p["state"]["status"] == status]


def test_a_full_edit_turn_stages_runs_asks_and_saves_v2(agent_stack, fake, project):
    cid, model_id, sse = project["cid"], project["model_id"], project["sse"]
    params = ok(agent_stack.api("GET", f"/api/v1/models/{model_id}/script/params"))
    wanted = {**params, "storeys": 2, "external_wall_fire_rating": "F90"}
    fake.script(
        Reply().reasoning("The user wants two storeys.").text("Let me read the parameters.").tool("get_params", {}),
        Reply().tool("set_params", {"params": wanted, "note": "two storeys, F90"}, split=7),
        Reply().tool("run_script", {}),
        Reply().tool("model_diff", {"base": "v1", "target": "current"}),
        Reply().text("6 new elements (a storey, its slab and walls), 4 walls rated F90.").tool("ask_user", {"question": "Save as a new version?", "options": [{"label": "yes"}, {"label": "no"}]}),
        Reply().tool("save_version", {"note": "two storeys, F90"}),
        Reply().text("Saved as v2."),
    )
    say(agent_stack, cid, ASK)
    ask = sse.wait_event("question.ask", timeout=120)
    staged = sse.wait_event("viewer.staged")
    assert staged.data["modelId"] == model_id and staged.data["kind"] == "ifc" and staged.data["semanticDiff"] == {"added": 6, "removed": 0, "changed": 4}
    run = next(p for p in tool_parts(sse, "completed") if p["tool"] == "run_script")
    summary = run["state"]["output"].splitlines()[-1]
    assert summary.startswith("Staging diff summary: elements added 6, removed 0, changed 4") and "storeys: 1 -> 2" in summary
    reasoning = [f for f in sse.frames if f.event == "message.part.updated" and f.data["part"]["type"] == "reasoning"]
    assert reasoning and reasoning[-1].data["part"]["text"] == "The user wants two storeys."
    ok(agent_stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={"interruptId": ask.data["interruptId"], "answer": "yes"}))
    sse.wait_event("session.idle", after=ask.id, timeout=120)
    committed = sse.wait_event("viewer.committed")
    assert committed.data == {"sessionID": cid, "modelId": model_id, "kind": "ifc", "version": "v2"}
    assert [v["version"] for v in ok(agent_stack.api("GET", f"/api/v1/models/{model_id}/edit/versions"))["versions"]] == ["v1", "v2"]
    model = agent_stack.wait_model(model_id)
    assert model["status"] == "ready"
    metadata = agent_stack.api("GET", f"/v1/models/{model_id}/metadata.json").json()
    assert sum(o["type"] == "IfcWall" for o in metadata["metaObjects"]) == 8
    changes = ok(agent_stack.api("GET", f"/api/v1/models/{model_id}/changes"))
    assert changes and {(c["author"], c["provenance"]["source"]) for c in changes} == {("agent", "AI")}
    # every tool result went back to the model, in order, and the key was sent
    assert all(r["auth"] == "Bearer test-key" and r["body"]["model"] == "fake-model" for r in fake.requests)
    second = fake.requests[1]["body"]["messages"]
    assert second[0]["role"] == "system" and second[-1]["role"] == "tool" and '"storeys": 1' in second[-1]["content"]
    set_params = next(p for p in tool_parts(sse, "completed") if p["tool"] == "set_params")
    assert set_params["state"]["input"]["params"] == wanted  # reassembled from split argument chunks


def test_a_sub_agent_does_part_of_the_work(agent_stack, fake, project):
    cid, sse = project["cid"], project["sse"]
    fake.script(
        Reply().tool("delegate", {"persona": "analyst", "task": "List the versions"}),
        Reply().tool("list_versions", {}),
        Reply().text("There is one version, v1."),
        Reply().text("The analyst found one version."),
    )
    say(agent_stack, cid, "How many versions are there?")
    sse.wait_event("session.idle", timeout=120)
    statuses = [f.data for f in sse.frames if f.event == "subagent.status"]
    assert [s["status"] for s in statuses] == ["running", "completed"]
    subagent_id = statuses[0]["subagentId"]
    assert statuses[0]["persona"] == "analyst" and statuses[1]["result"] == "There is one version, v1."
    tagged = [f for f in sse.frames if f.event.startswith("message.") and f.data.get("subagentId") == subagent_id]
    assert any(f.data.get("part", {}).get("tool") == "list_versions" for f in tagged)
    delegate = next(p for p in tool_parts(sse, "completed") if p["tool"] == "delegate")
    assert f"subagent_id: {subagent_id}" in delegate["state"]["output"]
    messages = ok(agent_stack.api("GET", f"/api/v1/chat/sessions/{cid}/messages"))
    assert any(m["info"].get("subagentId") == subagent_id and m["info"]["role"] == "user" for m in messages)
    sub_request = fake.requests[1]["body"]
    assert [t["function"]["name"] for t in sub_request["tools"]] and "delegate" not in [t["function"]["name"] for t in sub_request["tools"]]


def test_the_agent_writes_the_plan_and_delivers_it(agent_stack, fake, project):
    cid, model_id, sse = project["cid"], project["model_id"], project["sse"]
    fake.script(
        Reply().tool("write_plan", {"name": "plan", "content": PLAN}),
        Reply().tool("deliver", {"plan": PLAN, "bimSupplement": SUPPLEMENT}),
        Reply().text("Delivered."),
    )
    say(agent_stack, cid, "deliver the room programme")
    sse.wait_event("session.idle", timeout=120)
    assert [p["tool"] for p in tool_parts(sse, "completed")] == ["write_plan", "deliver"]
    committed = [f.data for f in sse.frames if f.event == "viewer.committed"]
    assert committed == [{"sessionID": cid, "modelId": model_id, "kind": "ifc", "version": "v2"}]
    history = ok(agent_stack.api("GET", f"/api/v1/projects/{project['project_id']}/plan_history"))
    assert [(v["operation"], v["author"], v["provenance"]["source"]) for v in history["versions"]] == [("put", "agent", "AI"), ("deliver", "agent", "AI")]


def test_abort_during_a_long_sandbox_run_ends_it_within_a_second(agent_stack, fake, project):
    cid, model_id, sse = project["cid"], project["model_id"], project["sse"]
    before = agent_stack.api("GET", f"/api/v1/models/{model_id}/download?product=current").content
    fake.script(Reply().tool("put_script", {"script": SLEEPING_SCRIPT}), Reply().tool("run_script", {}))
    say(agent_stack, cid, "run the slow script")
    sse.wait_for(lambda f: f.event == "message.part.updated" and f.data["part"].get("tool") == "run_script" and f.data["part"]["state"]["status"] == "running", timeout=60)
    time.sleep(1)  # the sandbox is running
    staged_script = ok(agent_stack.api("GET", f"/api/v1/models/{model_id}/script"))
    started = time.monotonic()
    assert ok(agent_stack.api("POST", f"/api/v1/chat/sessions/{cid}/abort")) == {"aborted": True}
    sse.wait_event("session.idle", timeout=5)
    assert time.monotonic() - started < 1.0
    aborted = next(p for p in tool_parts(sse, "error") if p["tool"] == "run_script")
    assert aborted["state"]["error"] == "Tool execution aborted" and aborted["state"]["metadata"]["interrupted"] is True
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and bwrap_running():
        time.sleep(0.1)
    assert not bwrap_running()
    assert agent_stack.api("GET", f"/api/v1/models/{model_id}/download?product=current").content == before  # nothing published
    assert ok(agent_stack.api("GET", f"/api/v1/models/{model_id}/script")) == staged_script  # staging untouched


def test_abort_while_the_model_streams_closes_the_provider_connection(agent_stack, fake, project):
    cid, sse = project["cid"], project["sse"]
    fake.script(Reply().text("Thinking about it").hold().text(" forever"))
    say(agent_stack, cid, "take your time")
    sse.wait_event("message.part.delta", timeout=60)
    started = time.monotonic()
    ok(agent_stack.api("POST", f"/api/v1/chat/sessions/{cid}/abort"))
    sse.wait_event("session.idle", timeout=5)
    assert time.monotonic() - started < 1.0
    fake.release()
    deadline = time.monotonic() + 5
    while fake.disconnected == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake.disconnected >= 1


@pytest.mark.parametrize(
    "reply, name, text",
    [
        (Reply(status=401, error_body={"error": {"message": "bad key"}}), "ProviderAuthError", "bad key"),
        (Reply().text("Hello").fail_mid_stream("the model overloaded"), "APIError", "the model overloaded"),
    ],
)
def test_a_provider_error_ends_the_turn_with_session_error(agent_stack, fake, project, reply, name, text):
    cid, sse = project["cid"], project["sse"]
    fake.script(reply)
    say(agent_stack, cid, "hello")
    error = sse.wait_event("session.error", timeout=60)
    assert error.data["error"]["name"] == name and text in error.data["error"]["data"]["message"]
    idle = sse.wait_event("session.idle", after=error.id, timeout=10)
    assert idle.data == {}


def test_malformed_tool_arguments_become_a_tool_error_and_the_turn_goes_on(agent_stack, fake, project):
    cid, sse = project["cid"], project["sse"]
    fake.script(Reply().tool("get_params", '{"modelId": '), Reply().tool("no_such_tool", {}), Reply().text("Sorry, fixed."))
    say(agent_stack, cid, "params?")
    sse.wait_event("session.idle", timeout=60)
    errors = tool_parts(sse, "error")
    assert "not valid JSON" in errors[0]["state"]["error"] and "unknown tool" in errors[1]["state"]["error"]
    fed_back = [m for m in fake.requests[1]["body"]["messages"] if m["role"] == "tool"]
    assert fed_back[-1]["content"].startswith("Error: the arguments are not valid JSON")
    assert not [f for f in sse.frames if f.event == "session.error"]


def test_a_turn_cut_by_a_gateway_restart_ends_with_session_error(agent_stack, fake, project):
    cid, sse = project["cid"], project["sse"]
    fake.script(Reply().text("Working").hold())
    say(agent_stack, cid, "a long job")
    sse.wait_event("message.part.delta", timeout=60)
    agent_stack.kill("gateway", signal.SIGKILL)
    fake.release()
    agent_stack.start_gateway()
    after = SSEStream(f"{agent_stack.url}/api/v1/chat/sessions/{cid}/events").start()
    try:
        status = after.wait_event("session.status")
        assert status.data["status"] == "idle"
    finally:
        after.close()
    messages = ok(agent_stack.api("GET", f"/api/v1/chat/sessions/{cid}/messages"))
    assert messages[-1]["info"]["error"]["name"] == "UnknownError" and "restart" in messages[-1]["info"]["error"]["data"]["message"]
    log = json.dumps(ok(agent_stack.api("GET", f"/api/v1/chat/sessions/{cid}/messages")))
    assert "gateway restarted" in log
