"""The chat agent on the real processes with the real OpenAI client, against a local fake OpenAI-compatible server
that streams scripted completions (split tool-call arguments, pauses, holds, errors)."""

import json
import signal
import time

import psutil
import pytest

from tests.e2e.stack import Stack
from tests.fake_openai import FakeOpenAI, Reply
from tests.helpers import ok, poll
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


@pytest.fixture(scope="module")
def agent_stack(tmp_path_factory, fake):
    config = {"llmAPIKey": "test-key", "llmBaseURL": fake.url, "llmModel": "fake-model"}
    running = Stack(tmp_path_factory.mktemp("agent"), workers=1, config=config).start()
    running.start_check_worker()
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


def bwrap_running(stack) -> bool:
    """A sandbox of this stack's edit service is running (other bwrap processes on the machine are not ours)."""
    try:
        children = psutil.Process(stack.processes["edit"].pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return False
    running = []
    for child in children:
        try:
            running.append(child.name() == "bwrap")
        except psutil.NoSuchProcess:  # ended meanwhile
            continue
    return any(running)


def say(stack, cid, text):
    ok(stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": text}))


def answer(stack, cid, sse, text, after=None, timeout=60):
    ask = sse.wait_event("question.ask", after=after, timeout=timeout)
    ok(stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={"interruptId": ask.data["interruptId"], "answer": text}))
    return ask


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
    permission = sse.wait_event("question.ask", after=ask.id, timeout=60)  # save_version is irreversible
    assert permission.data["kind"] == "permission" and permission.data["permission"] == {"tool": "save_version", "input": {"note": "two storeys, F90"}}
    ok(agent_stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={"interruptId": permission.data["interruptId"], "answer": "once"}))
    sse.wait_event("session.idle", after=permission.id, timeout=120)
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
    answer(agent_stack, cid, sse, "once")
    sse.wait_event("session.idle", timeout=120)
    assert [p["tool"] for p in tool_parts(sse, "completed")] == ["write_plan", "deliver"]
    committed = [f.data for f in sse.frames if f.event == "viewer.committed"]
    assert committed == [{"sessionID": cid, "modelId": model_id, "kind": "ifc", "version": "v2"}]
    history = ok(agent_stack.api("GET", f"/api/v1/projects/{project['project_id']}/plan_history"))
    assert [(v["operation"], v["author"], v["provenance"]["source"]) for v in history["versions"]] == [("put", "agent", "AI"), ("deliver", "agent", "AI")]


def test_abort_during_a_long_sandbox_run_ends_the_turn_while_the_script_still_sleeps(agent_stack, fake, project):
    cid, model_id, sse = project["cid"], project["model_id"], project["sse"]
    before = agent_stack.api("GET", f"/api/v1/models/{model_id}/download?product=current").content
    seconds = 50  # the script would end by itself after that (the sandbox's wall limit is 60 s)
    fake.script(Reply().tool("put_script", {"script": SLEEPING_SCRIPT.replace('"seconds": 20', f'"seconds": {seconds}')}), Reply().tool("run_script", {}))
    say(agent_stack, cid, "run the slow script")
    sse.wait_for(lambda f: f.event == "message.part.updated" and f.data["part"].get("tool") == "run_script" and f.data["part"]["state"]["status"] == "running", timeout=60)
    poll(lambda: bwrap_running(agent_stack), bool, timeout=30)  # the sandbox is running
    script_ends = time.monotonic() + seconds  # not before: the script starts sleeping after its sandbox started
    staged_script = ok(agent_stack.api("GET", f"/api/v1/models/{model_id}/script"))
    assert ok(agent_stack.api("POST", f"/api/v1/chat/sessions/{cid}/abort")) == {"aborted": True}
    # the turn ends while the script still sleeps: the wait for the idle gives up before the script could have ended
    sse.wait_event("session.idle", timeout=script_ends - time.monotonic() - 5)
    aborted = next(p for p in tool_parts(sse, "error") if p["tool"] == "run_script")
    assert aborted["state"]["error"] == "Tool execution aborted" and aborted["state"]["metadata"]["interrupted"] is True
    assert not [p for p in tool_parts(sse, "completed") if p["tool"] == "run_script"]
    assert not [f for f in sse.frames if f.event == "viewer.staged"]  # the run built nothing
    assert len(fake.requests) == 2  # the model was not asked again after the abort
    poll(lambda: bwrap_running(agent_stack), lambda running: not running, timeout=30)  # the sandbox goes
    assert agent_stack.api("GET", f"/api/v1/models/{model_id}/download?product=current").content == before  # nothing published
    assert ok(agent_stack.api("GET", f"/api/v1/models/{model_id}/script")) == staged_script  # staging untouched


def test_abort_while_the_model_streams_closes_the_provider_connection(agent_stack, fake, project):
    cid, sse = project["cid"], project["sse"]
    fake.script(Reply().text("Thinking about it").hold().text(" forever"))
    say(agent_stack, cid, "take your time")
    sse.wait_event("message.part.delta", timeout=60)
    held, disconnected = fake.requests[-1], fake.disconnected
    ok(agent_stack.api("POST", f"/api/v1/chat/sessions/{cid}/abort"))
    sse.wait_event("session.idle", timeout=30)  # shorter than the fake's own 60 s hold
    # the turn ended while the provider still held its stream: that request has not ended, the rest never came
    assert held["seconds"] is None and not fake.released.is_set()
    assert not [f for f in sse.frames if f.event == "message.part.delta" and "forever" in f.data["delta"]]
    fake.release()
    poll(lambda: fake.disconnected, lambda count: count > disconnected, timeout=30)  # its write found the connection closed
    assert held["seconds"] is not None


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


# --- scope, consent, order, queue, responsiveness (issue 20) -----------------------------------------------------

SELF_AGGREGATING_IFC = b"""ISO-10303-21;
HEADER;FILE_DESCRIPTION((''),'2;1');FILE_NAME('loop.ifc','2026-01-01T00:00:00',(''),(''),'','','');FILE_SCHEMA(('IFC4'));ENDSEC;
DATA;
#1=IFCPROJECT('0YvctVUKr0kugbFTf53O9L',$,'Loop',$,$,$,$,$,$);
#2=IFCWALL('1YvctVUKr0kugbFTf53O9L',$,'Wall',$,$,$,$,$,$);
#3=IFCRELAGGREGATES('2YvctVUKr0kugbFTf53O9L',$,$,$,#2,(#2));
ENDSEC;
END-ISO-10303-21;
"""


def versions_of(stack, model_id):
    return [v["version"] for v in ok(stack.api("GET", f"/api/v1/models/{model_id}/edit/versions"))["versions"]]


def test_a_model_of_another_project_is_refused_by_every_tool(agent_stack, fake, project):
    cid, sse = project["cid"], project["sse"]
    other = ok(agent_stack.api("POST", "/api/v1/chat/projects", json={"kind": "ifc", "title": "Other"}))["models"][0]
    agent_stack.wait_model(other)
    calls = {
        "put_script": {"script": "PARAMS = {}\n", "modelId": other},
        "save_version": {"modelId": other},
        "rollback": {"version": "v1", "modelId": other},
        "set_overrides": {"entityId": "x", "fields": {"Name": "steered"}, "modelId": other},
        "migrate_overrides": {"modelId": other},
        "create_issue": {"title": "steered", "modelId": other},
        "get_params": {"modelId": other},
        "find_elements": {"modelId": other},
        "delegate": {"persona": "analyst", "task": "look", "modelId": other},
    }
    reply = Reply()
    for index, (name, arguments) in enumerate(calls.items()):
        reply.tool(name, arguments, index=index)
    reply.tool("set_params", {"params": {"source": {"model": other, "version": "v1"}}}, index=len(calls))
    fake.script(reply, Reply().text("All refused."))
    say(agent_stack, cid, "the issue text says: edit model " + other)
    sse.wait_event("session.idle", timeout=120)
    errors = {p["tool"]: p["state"]["error"] for p in tool_parts(sse, "error")}
    assert set(errors) == {*calls, "set_params"}
    assert all(f"model {other} is not a model of this session's project" in errors[name] for name in calls), errors
    assert "not a drawing of this session's project" in errors["set_params"]
    assert not [f for f in sse.frames if f.event == "question.ask"]  # refused before anyone is asked
    assert versions_of(agent_stack, other) == ["v1"]
    assert ok(agent_stack.api("GET", f"/api/v1/models/{other}/script"))["source"] == "version"  # nothing staged
    assert ok(agent_stack.api("GET", f"/api/v1/models/{other}/issues")) == [] and ok(agent_stack.api("GET", f"/api/v1/models/{other}/overrides")) == {}
    assert ok(agent_stack.api("GET", f"/api/v1/models/{project['model_id']}/script"))["source"] == "version"


def test_a_question_holds_the_save_after_it_and_a_rejected_permission_reaches_the_model(agent_stack, fake, project):
    cid, model_id, sse = project["cid"], project["model_id"], project["sse"]
    params = ok(agent_stack.api("GET", f"/api/v1/models/{model_id}/script/params"))
    fake.script(
        Reply().tool("set_params", {"params": {**params, "storeys": 2}}),
        Reply().tool("run_script", {}),
        Reply().tool("ask_user", {"question": "Save it?"}, index=0).tool("save_version", {"note": "two storeys"}, index=1),
        Reply().text("Understood: it stays staged."),
    )
    say(agent_stack, cid, "two storeys, and save it")
    ask = sse.wait_event("question.ask", timeout=120)
    assert ask.data["kind"] == "question" and ask.data["question"] == "Save it?"
    time.sleep(3)  # the save would have run by now if it were not held
    assert versions_of(agent_stack, model_id) == ["v1"]
    save = [p for p in tool_parts(sse) if p["tool"] == "save_version"]
    assert save and save[-1]["state"]["status"] == "pending" and save[-1]["state"]["input"] == {"note": "two storeys"}
    ok(agent_stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={"interruptId": ask.data["interruptId"], "answer": "yes"}))
    permission = sse.wait_event("question.ask", after=ask.id, timeout=60)
    assert permission.data["kind"] == "permission" and permission.data["permission"]["tool"] == "save_version"
    assert permission.data["tool"]["callID"] == save[-1]["callID"]
    assert versions_of(agent_stack, model_id) == ["v1"]
    ok(agent_stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={"interruptId": permission.data["interruptId"], "answer": "reject: keep it staged"}))
    sse.wait_event("session.idle", after=permission.id, timeout=60)
    assert versions_of(agent_stack, model_id) == ["v1"]
    assert ok(agent_stack.api("GET", f"/api/v1/models/{model_id}/script"))["source"] == "staging"
    fed_back = {m["tool_call_id"]: m["content"] for m in fake.requests[-1]["body"]["messages"] if m["role"] == "tool"}
    assert fed_back[save[-1]["callID"]] == "Error: The user rejected this call: keep it staged"


def test_a_message_sent_during_a_turn_waits_for_its_own_turn(agent_stack, fake, project):
    cid, sse = project["cid"], project["sse"]
    fake.script(Reply().text("Working on it").hold().tool("get_params", {}), Reply().text("First done."), Reply().text("Second done."))
    say(agent_stack, cid, "first")
    sse.wait_event("message.part.delta", timeout=60)
    say(agent_stack, cid, "second")
    listed = ok(agent_stack.api("GET", f"/api/v1/chat/sessions/{cid}/messages"))
    assert listed[-1]["info"]["queued"] is True and listed[-1]["parts"][0]["text"] == "second"
    assert sum(1 for m in listed if m["info"]["role"] == "user") == 2
    fake.release()
    first_idle = sse.wait_event("session.idle", timeout=60)
    sse.wait_event("session.idle", after=first_idle.id, timeout=60)
    messages = ok(agent_stack.api("GET", f"/api/v1/chat/sessions/{cid}/messages"))
    texts = [(m["info"]["role"], "".join(p.get("text", "") for p in m["parts"] if p["type"] == "text")) for m in messages]
    second = next(i for i, (role, text) in enumerate(texts) if role == "user" and text == "second")
    assert [t for _, t in texts[:second] if t] [-1] == "First done."  # every message of turn 1 comes before it
    assert "queued" not in messages[second]["info"] and messages[second]["info"]["queuedID"] == listed[-1]["info"]["id"]
    assert [m["info"]["id"] for m in messages] == sorted(m["info"]["id"] for m in messages)
    turn_one_requests = [r for r in fake.requests if any(m.get("content") == "first" for m in r["body"]["messages"])][:2]
    assert len(turn_one_requests) == 2 and not any(m.get("content") == "second" for r in turn_one_requests for m in r["body"]["messages"])
    assert fake.requests[-1]["body"]["messages"][-1] == {"role": "user", "content": "second"}


def test_the_gateway_answers_while_a_tool_works_for_ten_seconds(agent_stack, fake, project):
    cid, sse = project["cid"], project["sse"]
    fake.script(Reply().tool("put_script", {"script": SLEEPING_SCRIPT.replace('"seconds": 20', '"seconds": 10')}), Reply().tool("run_script", {}), Reply().text("Built."))
    say(agent_stack, cid, "run the slow script")
    sse.wait_for(lambda f: f.event == "message.part.updated" and f.data["part"].get("tool") == "run_script" and f.data["part"]["state"]["status"] == "running", timeout=60)
    models = agent_stack.api("GET", "/api/v1/models")
    assert models.status_code == 200 and ok(models)
    assert not [p for p in tool_parts(sse, "completed") if p["tool"] == "run_script"]  # answered while the tool still works
    sse.wait_event("session.idle", timeout=120)
    assert [p for p in tool_parts(sse, "completed") if p["tool"] == "run_script"]


def test_a_wall_that_aggregates_itself_blocks_nothing(agent_stack, fake):
    fake.replies.clear()
    model_id = ok(agent_stack.api("POST", "/api/v1/models", files={"file": ("loop.ifc", SELF_AGGREGATING_IFC)}))["id"]
    model = agent_stack.wait_model(model_id)
    if model["status"] == "ready":  # conversion repairs the loop
        metadata = agent_stack.api("GET", f"/v1/models/{model_id}/metadata.json").json()
        assert all(o.get("parent") != o["id"] for o in metadata["metaObjects"])
    # the agent's walk is safe on its own: a metadata.json with a self-parent and a ring
    (agent_stack.data_dir / "models" / model_id / "metadata.json").write_text(json.dumps({"projectId": "P", "metaObjects": [
        {"id": "P", "type": "IfcProject", "name": "p"}, {"id": "W", "type": "IfcWall", "name": "Wall", "parent": "W"},
        {"id": "A", "type": "IfcSlab", "name": "a", "parent": "B"}, {"id": "B", "type": "IfcSlab", "name": "b", "parent": "A"},
    ], "propertySets": []}))
    cid = ok(agent_stack.api("POST", "/api/v1/chat/sessions", json={"title": "loop", "modelId": model_id}))["chatSessionId"]
    sse = SSEStream(f"{agent_stack.url}/api/v1/chat/sessions/{cid}/events").start()
    try:
        fake.script(Reply().tool("find_elements", {"storey": "ground"}), Reply().tool("find_elements", {}), Reply().text("Found them."))
        say(agent_stack, cid, "find elements")
        assert agent_stack.api("GET", "/api/v1/models").status_code == 200
        sse.wait_event("session.idle", timeout=60)
        found = [p for p in tool_parts(sse, "completed") if p["tool"] == "find_elements"]
        assert [json.loads(p["state"]["output"])["total"] for p in found] == [0, 4]
    finally:
        sse.close()


def test_frames_raised_by_a_sub_agents_tools_carry_its_id(agent_stack, fake, project):
    cid, model_id, sse = project["cid"], project["model_id"], project["sse"]
    params = ok(agent_stack.api("GET", f"/api/v1/models/{model_id}/script/params"))
    fake.script(
        Reply().tool("delegate", {"persona": "modeler", "task": "two storeys"}),
        Reply().tool("set_params", {"params": {**params, "storeys": 2}}),
        Reply().tool("run_script", {}),
        Reply().text("Staged and built two storeys."),
        Reply().text("The modeler staged two storeys."),
    )
    say(agent_stack, cid, "two storeys please")
    sse.wait_event("session.idle", timeout=120)
    subagent_id = next(f.data["subagentId"] for f in sse.frames if f.event == "subagent.status")
    staged = sse.wait_event("viewer.staged")
    assert staged.data["subagentId"] == subagent_id and staged.data["modelId"] == model_id
    ok(agent_stack.api("POST", f"/api/v1/models/{model_id}/script/discard"))


def test_a_history_past_the_budget_is_compacted_and_the_next_turn_succeeds(tmp_path):
    # the provider refuses messages past 12,000 characters (turn 4 would pass that); the gateway's budget
    # (llmContextTokens 12000, of which the tool descriptions take about 4,300) keeps every request below it
    provider = FakeOpenAI(context_limit_chars=12_000)
    config = {"llmAPIKey": "k", "llmBaseURL": provider.url, "llmModel": "fake-model", "llmContextTokens": 12000, "llmPricePerMTokIn": 1.0, "llmPricePerMTokOut": 4.0}
    stack = Stack(tmp_path, workers=0, config=config).start()
    try:
        cid = ok(stack.api("POST", "/api/v1/chat/sessions", json={"title": "long", "modelId": ""}))["chatSessionId"]
        sse = SSEStream(f"{stack.url}/api/v1/chat/sessions/{cid}/events").start()
        sse.wait_event("session.status")
        try:
            usage = {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940, "prompt_tokens_details": {"cached_tokens": 300},
                     "completion_tokens_details": {"reasoning_tokens": 10}}
            for number in range(1, 7):
                provider.script(Reply(usage=usage).text(f"Answer {number}: " + "noted. " * 50))
                last = sse.frames[-1].id
                say(stack, cid, f"Message {number}: " + "the north wing walls need a rating check. " * 60)
                sse.wait_event("session.idle", after=last, timeout=60)
            assert not [f for f in sse.frames if f.event == "session.error"] and provider.refused_for_length == 0
            messages = ok(stack.api("GET", f"/api/v1/chat/sessions/{cid}/messages"))
            summaries = [m for m in messages if m["info"].get("summary")]
            assert summaries and summaries[-1]["parts"][0]["type"] == "compaction"
            last_request = provider.requests[-1]["body"]["messages"]
            assert "Summary of the earlier conversation" in last_request[1]["content"]
            assert not any(str(m.get("content") or "").startswith("Message 1:") for m in last_request)
            assert last_request[-1]["content"].startswith("Message 6:")  # the current turn verbatim
            step = next(m["info"] for m in reversed(messages) if m["info"]["role"] == "assistant" and not m["info"].get("summary"))
            assert step["tokens"] == {"input": 600, "output": 40, "reasoning": 10, "cache": {"read": 300, "write": 0}}
            assert step["cost"] == round((600 * 1.0 + 300 * 1.0 + 40 * 4.0) / 1e6, 6)
        finally:
            sse.close()
    finally:
        stack.stop()
        provider.close()


FIRE_IDS = """<?xml version="1.0" encoding="utf-8"?>
<ids xmlns="http://standards.buildingsmart.org/IDS" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://standards.buildingsmart.org/IDS http://standards.buildingsmart.org/IDS/1.0/ids.xsd">
  <info><title>Fire rating</title></info>
  <specifications>
    <specification name="Walls are rated F90" ifcVersion="IFC2X3 IFC4 IFC4X3_ADD2" instructions="Pset_WallCommon.FireRating F90">
      <applicability minOccurs="1" maxOccurs="unbounded">
        <entity><name><simpleValue>IFCWALL</simpleValue></name></entity>
      </applicability>
      <requirements>
        <property dataType="IFCLABEL">
          <propertySet><simpleValue>Pset_WallCommon</simpleValue></propertySet>
          <baseName><simpleValue>FireRating</simpleValue></baseName>
          <value><simpleValue>F90</simpleValue></value>
        </property>
      </requirements>
    </specification>
  </specifications>
</ids>
"""


def test_the_agent_makes_the_model_pass_an_ids_check_rechecks_and_asks_before_saving(agent_stack, fake, project):
    """Check, edit PARAMS, run, check again, save only after permission; then explain the first check's failures."""
    cid, model_id, sse = project["cid"], project["model_id"], project["sse"]
    ok(agent_stack.api("PUT", f"/api/v1/projects/{project['project_id']}/ids/fire.ids", data=FIRE_IDS, headers={"Content-Type": "application/xml"}))
    params = ok(agent_stack.api("GET", f"/api/v1/models/{model_id}/script/params"))
    assert params["external_wall_fire_rating"] == "F30"
    fake.script(
        Reply().tool("run_ids_check", {"ids": ["fire.ids"]}),
        Reply().tool("set_params", {"params": {**params, "external_wall_fire_rating": "F90"}, "note": "F90 walls"}),
        Reply().tool("run_script", {}),
        Reply().tool("run_ids_check", {"ids": ["fire.ids"]}),
        Reply().tool("save_version", {"note": "walls F90: fire.ids passes"}),
        Reply().text("All specifications of fire.ids pass now; saved as v2."),
    )
    say(agent_stack, cid, "make the model pass the fire-rating IDS")
    permission = sse.wait_event("question.ask", timeout=300)
    assert permission.data["kind"] == "permission" and permission.data["permission"]["tool"] == "save_version"
    checks = [p for p in tool_parts(sse, "completed") if p["tool"] == "run_ids_check"]
    assert [c["state"]["metadata"]["summary"]["passed"] for c in checks] == [0, 1], [c["state"]["output"] for c in checks]
    assert "FAIL Walls are rated F90" in checks[0]["state"]["output"] and "found F30" in checks[0]["state"]["output"]
    assert versions_of(agent_stack, model_id) == ["v1"]  # nothing saved before the user allowed it
    ok(agent_stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={"interruptId": permission.data["interruptId"], "answer": "once"}))
    sse.wait_event("session.idle", after=permission.id, timeout=120)
    assert versions_of(agent_stack, model_id) == ["v1", "v2"]
    listed = ok(agent_stack.api("GET", f"/api/v1/models/{model_id}/checks"))
    assert {c["checkId"] for c in listed} == {c["state"]["metadata"]["checkId"] for c in checks}

    first = checks[0]["state"]["metadata"]["checkId"]
    fake.script(Reply().tool("explain_failures", {"checkId": first}), Reply().tool("pin_ids_failures", {"checkId": first}), Reply().text("Explained and pinned."))
    mark = sse.frames[-1].id
    say(agent_stack, cid, "why did it fail at first? pin that")
    sse.wait_event("session.idle", after=mark, timeout=120)
    explained = next(p for p in tool_parts(sse, "completed") if p["tool"] == "explain_failures")
    failing = json.loads(explained["state"]["output"])["failing"]
    assert failing[0]["specification"] == "Walls are rated F90" and failing[0]["examples"][0]["found"] == "F30"
    pinned = next(p for p in tool_parts(sse, "completed") if p["tool"] == "pin_ids_failures")
    issues = ok(agent_stack.api("GET", f"/api/v1/models/{model_id}/issues"))
    assert pinned["state"]["metadata"]["created"] == len(issues) > 0
    assert {(i["author"], i["provenance"]["source"]) for i in issues} == {("agent", "AI")}
