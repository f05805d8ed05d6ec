"""Chat projects, sessions and the live event stream, on the real processes, driven by the offline model: an ordinary
message gets its note that no language model is configured; "demo" in an ifc project's session first asks for
permission to copy the model (demo_copy), then works on the copy."""

import time

import pytest
import requests

from tests.e2e.stack import Stack, free_port
from tests.sse import SSEStream
from tests.helpers import ok

pytestmark = pytest.mark.e2e

DEMO = "demo"


@pytest.fixture(scope="module")
def chat_stack(tmp_path_factory):
    running = Stack(tmp_path_factory.mktemp("chat"), workers=1, env={"VIEWER_SSE_HEARTBEAT_SECONDS": "0.5"}).start()
    yield running
    running.stop()


def new_session(stack, kind="ifc"):
    project = ok(stack.api("POST", "/api/v1/chat/projects", json={"kind": kind}))
    return project, ok(stack.api("POST", "/api/v1/chat/sessions", json={"projectId": project["projectId"], "title": "t"}))


def lone_session(stack):
    """A session without project or model: the offline model answers with its note, asking nothing."""
    return ok(stack.api("POST", "/api/v1/chat/sessions", json={"title": "alone", "modelId": ""}))


def stream(stack, cid, last_event_id=None, url=None) -> SSEStream:
    return SSEStream(f"{url or stack.url}/api/v1/chat/sessions/{cid}/events", last_event_id=last_event_id).start()


def turn_events(frames) -> list[str]:
    return [f.event for f in frames if f.event != "message.part.delta"]


def test_an_ifc_project_gets_its_skeleton_model_saved_and_converted(chat_stack):
    project = ok(chat_stack.api("POST", "/api/v1/chat/projects", json={"kind": "ifc"}))
    assert project["title"] == "AI 项目" and project["kind"] == "ifc" and project["projectId"].startswith("p_")
    assert len(project["models"]) == 1
    model_id = project["models"][0]
    assert chat_stack.wait_model(model_id)["status"] == "ready"
    assert model_id in [m["id"] for m in ok(chat_stack.api("GET", "/api/v1/models"))]
    versions = ok(chat_stack.api("GET", f"/api/v1/models/{model_id}/edit/versions"))
    assert [v["version"] for v in versions["versions"]] == ["v1"]
    assert '"name": "AI 项目"' in ok(chat_stack.api("GET", f"/api/v1/models/{model_id}/script"))["script"]
    session = ok(chat_stack.api("POST", "/api/v1/chat/sessions", json={"projectId": project["projectId"]}))
    assert session["modelId"] == model_id and session["projectId"] == project["projectId"]


def test_cad_projects_start_blank_and_the_session_is_idempotent(chat_stack):
    for kind in ("cad", "cad->ifc"):
        project = ok(chat_stack.api("POST", "/api/v1/chat/projects", json={"kind": kind, "title": "Plan"}))
        assert project["models"] == [] and project["title"] == "Plan"
        first = ok(chat_stack.api("POST", "/api/v1/chat/sessions", json={"projectId": project["projectId"], "title": "x"}))
        again = ok(chat_stack.api("POST", "/api/v1/chat/sessions", json={"projectId": project["projectId"], "title": "y"}))
        assert first == again and first["chatSessionId"].startswith("c_") and first["modelId"] == ""
        assert first["externalSessionId"] and first["externalSessionId"] != first["chatSessionId"]
    listed = ok(chat_stack.api("GET", "/api/v1/chat/sessions"))
    assert first["chatSessionId"] in [s["chatSessionId"] for s in listed]


def test_legacy_sessions_one_per_model_and_none_without_a_model(chat_stack):
    from tests.helpers import MINIMAL_IFC

    model_id = ok(chat_stack.api("POST", "/api/v1/models", files={"file": ("a.ifc", MINIMAL_IFC)}))["id"]
    first = ok(chat_stack.api("POST", "/api/v1/chat/sessions", json={"title": "legacy", "modelId": model_id}))
    assert ok(chat_stack.api("POST", "/api/v1/chat/sessions", json={"title": "legacy", "modelId": model_id})) == first
    assert first["modelId"] == model_id and first["projectId"] == ""
    project = ok(chat_stack.api("POST", "/api/v1/chat/projects", json={"kind": "ifc"}))
    of_project = ok(chat_stack.api("POST", "/api/v1/chat/sessions", json={"title": "legacy", "modelId": project["models"][0]}))
    assert of_project["projectId"] == project["projectId"]  # a project's model talks in the project's session
    unbound = ok(chat_stack.api("POST", "/api/v1/chat/sessions", json={"title": "free", "modelId": ""}))
    assert unbound["modelId"] == "" and unbound["chatSessionId"] != first["chatSessionId"]
    for unknown in ("m_ffffffffffffffff", "not-a-model-id"):  # like an unknown project: 40001, the spec's 400
        refused = chat_stack.api("POST", "/api/v1/chat/sessions", json={"title": "x", "modelId": unknown})
        assert (refused.status_code, refused.json()["code"]) == (400, 40001)


def test_a_message_streams_its_turn_in_order_ending_idle(chat_stack):
    cid = lone_session(chat_stack)["chatSessionId"]
    sse = stream(chat_stack, cid)
    try:
        assert sse.response_headers["Content-Type"].startswith("text/event-stream")
        assert sse.response_headers["X-Accel-Buffering"] == "no" and "no-cache" in sse.response_headers["Cache-Control"]
        opening = sse.wait_event("session.status")
        assert opening.data == {"sessionID": cid, "status": "idle"}
        assert ok(chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": "Make the walls thicker"})) == {"accepted": True}
        sse.wait_event("session.idle", after=opening.id)
        turn = [f for f in sse.frames if (f.id or 0) > opening.id]
        ids = [f.id for f in turn]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        names = turn_events(turn)
        assert names[:2] == ["session.status", "message"] and turn[0].data["status"] == "busy"
        assert names[-2:] == ["session.status", "session.idle"] and turn[-2].data["status"] == "idle" and turn[-1].data == {}
        assert not [f for f in turn if f.event == "message.part.updated" and f.data["part"]["type"] == "tool"]  # no tool without being asked
        deltas = [f for f in turn if f.event == "message.part.delta"]
        text_parts = {f.data["part"]["id"]: f.data["part"] for f in turn if f.event == "message.part.updated" and f.data["part"]["type"] == "text"}
        for part_id, part in text_parts.items():
            assert "".join(d.data["delta"] for d in deltas if d.data["partID"] == part_id) == part["text"]
        assert "No language model is configured" in list(text_parts.values())[0]["text"]
        deadline = time.monotonic() + 5
        while not sse.comments and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sse.comments and set(sse.comments) == {"ping"}  # heartbeat while idle
    finally:
        sse.close()
    messages = ok(chat_stack.api("GET", f"/api/v1/chat/sessions/{cid}/messages"))
    assert [m["info"]["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["parts"][0]["text"] == "Make the walls thicker"
    assert all(m["info"]["sessionID"] == cid for m in messages)


def test_reconnect_with_last_event_id_replays_exactly_the_missed_frames(chat_stack):
    cid = lone_session(chat_stack)["chatSessionId"]
    from_the_start = stream(chat_stack, cid, last_event_id=0)
    try:
        creating = from_the_start.wait_event("session.creating")
        assert creating.id == 1 and creating.data == {"sessionID": cid, "projectId": "", "modelId": ""}
    finally:
        from_the_start.close()
    watcher = stream(chat_stack, cid)
    first = stream(chat_stack, cid)
    try:
        ok(chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": "A long answer please " * 3}))
        cut = first.wait_event("message.part.delta")
        first.close()  # the page reloads mid-turn
        resumed = stream(chat_stack, cid, last_event_id=cut.id)
        try:
            end = watcher.wait_event("session.idle")
            resumed.wait_event("session.idle")
            expected = [(f.id, f.event, f.data) for f in watcher.frames if cut.id < (f.id or 0) <= end.id]
            got = [(f.id, f.event, f.data) for f in resumed.frames if (f.id or 0) <= end.id]
            assert got == expected and len(got) > 5
        finally:
            resumed.close()
        # an id older than the 64 buffered frames (or one that never existed) gets a snapshot of the last turn
        ok(chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": "once more"}))
        head = watcher.wait_event("session.idle", after=end.id).id
        assert head > 64 + 1
        for stale_id in (1, head + 100, "garbage", "9" * 5000, "-1", "1" * 40):
            snapshot = stream(chat_stack, cid, last_event_id=stale_id)
            try:
                status = snapshot.wait_event("session.status")
                resync = [f for f in snapshot.frames if f.event == "message"]
                assert [f.data["info"]["role"] for f in resync] == ["user", "assistant"]
                assert resync[0].data["parts"][0]["text"] == "once more"
                assert all(f.data["resync"] is True and f.id == status.id == head for f in resync)
                assert status.data["status"] == "idle"
            finally:
                snapshot.close()
    finally:
        watcher.close()


def test_a_permission_request_is_answered_and_the_turn_resumes(chat_stack):
    _, session = new_session(chat_stack)
    cid = session["chatSessionId"]
    sse = stream(chat_stack, cid)
    try:
        ok(chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": DEMO}))
        ask = sse.wait_event("question.ask")
        assert ask.data["interruptId"].startswith("que_") and ask.data["kind"] == "permission"
        assert ask.data["permission"] == {"tool": "demo_copy", "input": {}} and [o["label"] for o in ask.data["options"]] == ["once", "always", "reject"]
        time.sleep(0.5)
        assert not [f for f in sse.frames if f.event == "session.idle"]  # the turn waits, busy
        # a reload meanwhile shows the pending question again
        reloaded = stream(chat_stack, cid)
        try:
            assert reloaded.wait_event("question.ask").data["interruptId"] == ask.data["interruptId"]
            assert [f.data["status"] for f in reloaded.frames if f.event == "session.status"] == ["busy"]
        finally:
            reloaded.close()
        wrong = chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={"interruptId": "que_000000000000", "answer": "once"})
        assert (wrong.status_code, wrong.json()["code"]) == (404, 40400)
        unclear = chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={"interruptId": ask.data["interruptId"], "answer": "sure"})
        assert (unclear.status_code, unclear.json()["code"]) == (400, 40001)
        answer = {"interruptId": ask.data["interruptId"], "answer": "reject: not now"}
        assert ok(chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json=answer)) == {"accepted": True}
        assert ok(chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json=answer)) == {"accepted": True}  # idempotent
        sse.wait_event("session.idle", after=ask.id)
        tool = next(f.data["part"] for f in reversed(sse.frames) if f.event == "message.part.updated" and f.data["part"].get("tool") == "demo_copy")
        assert tool["state"]["status"] == "error" and tool["state"]["error"] == "The user rejected this call: not now"
        final_text = next(f.data["part"]["text"] for f in reversed(sse.frames) if f.event == "message.part.updated" and f.data["part"]["type"] == "text")
        assert "not now" in final_text
        other = chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={**answer, "answer": "once"})
        assert other.json()["code"] == 40400  # already answered
    finally:
        sse.close()


def test_abort_ends_the_turn_within_a_second(tmp_path):
    slow = Stack(tmp_path, workers=1, env={"VIEWER_OFFLINE_PIECE_SECONDS": "0.2"}).start()
    try:
        _, session = new_session(slow)
        cid = session["chatSessionId"]
        sse = stream(slow, cid)
        try:
            ok(slow.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": "Stream a long reply"}))
            sse.wait_event("message.part.delta")
            started = time.monotonic()
            assert ok(slow.api("POST", f"/api/v1/chat/sessions/{cid}/abort")) == {"aborted": True}
            idle = sse.wait_event("session.idle", timeout=5)
            assert time.monotonic() - started < 1.0
            before_idle = [f for f in sse.frames if (f.id or 0) < idle.id]
            assistant = next(f.data["info"] for f in reversed(before_idle) if f.event == "message.updated")
            assert assistant["error"]["name"] == "MessageAbortedError" and assistant["time"]["completed"]
            assert ok(slow.api("POST", f"/api/v1/chat/sessions/{cid}/abort")) == {"aborted": False}
            # a permission request waiting for its answer is rejected by an abort
            ok(slow.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": DEMO}))
            ask = sse.wait_event("question.ask", timeout=60)
            assert ok(slow.api("POST", f"/api/v1/chat/sessions/{cid}/abort")) == {"aborted": True}
            sse.wait_event("session.idle", after=ask.id, timeout=5)
            late = slow.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={"interruptId": ask.data["interruptId"], "answer": "once"})
            assert late.json()["code"] == 40400
        finally:
            sse.close()
    finally:
        slow.stop()


def test_two_gateway_processes_share_sessions_over_redis(tmp_path):
    redis_stack = Stack(tmp_path, workers=1, config={"redisURL": "redis://127.0.0.1:6379/0"}).start()
    try:
        other_url = redis_stack.start_gateway("gateway-b", port=free_port())
        _, session = new_session(redis_stack)
        cid = session["chatSessionId"]
        sse = stream(redis_stack, cid, url=other_url)
        try:
            ok(redis_stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": DEMO}))
            ask = sse.wait_event("question.ask", timeout=60)
            # the answer goes to the other process, which resumes the turn
            ok(requests.post(f"{other_url}/api/v1/chat/sessions/{cid}/answer", json={"interruptId": ask.data["interruptId"], "answer": "reject"}, timeout=30))
            sse.wait_event("session.idle", after=ask.id, timeout=60)
            ids = [f.id for f in sse.frames if f.id]
            assert ids == sorted(ids) and len(ids) == len(set(ids))
        finally:
            sse.close()
    finally:
        redis_stack.stop()


def answer_when_asked(stack, cid, sse, after, answer="once"):
    ask = sse.wait_event("question.ask", after=after, timeout=180)
    ok(stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={"interruptId": ask.data["interruptId"], "answer": answer}))
    return ask


def test_the_offline_demo_shows_the_whole_loop_on_a_copy(chat_stack):
    project, session = new_session(chat_stack, kind="ifc")
    cid, model_id = session["chatSessionId"], project["models"][0]
    chat_stack.wait_model(model_id)
    sse = stream(chat_stack, cid)
    try:
        ok(chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": DEMO}))
        first = answer_when_asked(chat_stack, cid, sse, None)
        assert first.data["permission"]["tool"] == "demo_copy"
        copy_id = sse.wait_event("model.created", timeout=120).data["modelId"]
        ask = answer_when_asked(chat_stack, cid, sse, first.id)
        assert ask.data["permission"]["tool"] == "save_version"
        staged = sse.wait_event("viewer.staged")
        assert staged.data["modelId"] == copy_id and staged.data["semanticDiff"]["added"] > 0  # one more storey, on the copy
        sse.wait_event("session.idle", after=ask.id, timeout=180)
        assert sse.wait_event("viewer.committed").data == {"sessionID": cid, "modelId": copy_id, "kind": "ifc", "version": "v2"}
        tools = [f.data["part"]["tool"] for f in sse.frames if f.event == "message.part.updated" and f.data["part"].get("state", {}).get("status") == "completed"]
        assert tools == ["session_info", "demo_copy", "get_params", "set_params", "run_script", "save_version"]
        assert ok(chat_stack.api("GET", f"/api/v1/models/{copy_id}/script/params"))["storeys"] == 2
        assert ok(chat_stack.api("GET", f"/api/v1/models/{model_id}/script/params"))["storeys"] == 1  # the model itself as it was
    finally:
        sse.close()
    # a cad project has no ifc model to copy: the demonstration says so and changes nothing
    project, session = new_session(chat_stack, kind="cad")
    cid = session["chatSessionId"]
    sse = stream(chat_stack, cid)
    try:
        ok(chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": DEMO}))
        sse.wait_event("session.idle", timeout=60)
        assert not [f for f in sse.frames if f.event in ("question.ask", "model.created")]
        reopened = ok(chat_stack.api("POST", "/api/v1/chat/sessions", json={"projectId": project["projectId"]}))
        assert reopened["modelId"] == ""
    finally:
        sse.close()


def test_deleting_a_project_leaves_no_file_or_row_behind(chat_stack):
    project, session = new_session(chat_stack, kind="ifc")
    cid, model_id = session["chatSessionId"], project["models"][0]
    chat_stack.wait_model(model_id)
    sse = stream(chat_stack, cid)
    ok(chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": DEMO}))
    sse.wait_event("question.ask", timeout=120)  # the demo asks before it copies: the project goes while it waits
    sse.close()
    ok(chat_stack.api("POST", f"/api/v1/models/{model_id}/issues", files={"issue": (None, '{"title": "t"}')}))
    assert ok(chat_stack.api("DELETE", f"/api/v1/chat/projects/{project['projectId']}")) is None
    assert not (chat_stack.data_dir / "models" / model_id).exists()
    assert chat_stack.api("GET", f"/api/v1/models/{model_id}").json()["code"] == 40400
    assert chat_stack.api("GET", f"/api/v1/chat/sessions/{cid}/messages").json()["code"] == 40400
    assert cid not in [s["chatSessionId"] for s in ok(chat_stack.api("GET", "/api/v1/chat/sessions"))]
    assert ok(chat_stack.api("DELETE", f"/api/v1/trash/{project['projectId']}")) is None  # the purge
    assert not (chat_stack.data_dir / "trash" / "models" / model_id).exists()
    rows = chat_stack.count_rows({"chat_app_sessionevent": f"session_id = '{cid}'", "chat_app_message": f"session_id = '{cid}'",
                                         "issues_app_issue": f"model_id = '{model_id}'", "models_app_project": f"id = '{project['projectId']}'"})
    assert rows == {"chat_app_sessionevent": 0, "chat_app_message": 0, "issues_app_issue": 0, "models_app_project": 0}
    assert chat_stack.api("DELETE", f"/api/v1/chat/projects/{project['projectId']}").json()["code"] == 40400


def test_deleting_a_model_removes_it_from_its_project(chat_stack):
    project, session = new_session(chat_stack, kind="ifc")
    model_id = project["models"][0]
    ok(chat_stack.api("DELETE", f"/api/v1/models/{model_id}"))
    reopened = ok(chat_stack.api("POST", "/api/v1/chat/sessions", json={"projectId": project["projectId"]}))
    assert reopened["modelId"] == ""
    ok(chat_stack.api("DELETE", f"/api/v1/trash/{model_id}"))  # the purge
    overview = chat_stack.count_rows({"models_app_projectmodel": f"model_id = '{model_id}'"})
    assert overview == {"models_app_projectmodel": 0}


@pytest.mark.parametrize(
    "method, path, body, status, code",
    [
        ("POST", "/api/v1/chat/projects", {}, 400, 40001),
        ("POST", "/api/v1/chat/projects", {"kind": "dwg"}, 400, 40001),
        ("POST", "/api/v1/chat/projects", [1], 400, 40001),
        ("POST", "/api/v1/chat/sessions", {"projectId": "p_0000000000000000"}, 400, 40001),
        ("POST", "/api/v1/chat/sessions", {"projectId": "../etc"}, 400, 40001),
        ("POST", "/api/v1/chat/sessions", {"modelId": "m_0000000000000000"}, 400, 40001),
        ("POST", "/api/v1/chat/sessions/c_0000000000000000/messages", {"text": "hi"}, 404, 40400),
        ("POST", "/api/v1/chat/sessions/c_xyz/messages", {"text": "hi"}, 404, 40400),
        ("GET", "/api/v1/chat/sessions/c_0000000000000000/messages", None, 404, 40400),
        ("GET", "/api/v1/chat/sessions/..%2f..%2fetc/events", None, 404, 40400),
        ("GET", "/api/v1/chat/sessions/c_0000000000000000/events", None, 404, 40400),
        ("POST", "/api/v1/chat/sessions/c_0000000000000000/abort", None, 404, 40400),
        ("DELETE", "/api/v1/chat/projects/p_0000000000000000", None, 404, 40400),
        ("DELETE", "/api/v1/chat/projects/nope", None, 404, 40400),
    ],
)
def test_bad_requests_get_their_codes(chat_stack, method, path, body, status, code):
    response = chat_stack.api(method, path, json=body)
    assert (response.status_code, response.json()["code"]) == (status, code), response.text


def test_bad_messages_and_answers_change_nothing(chat_stack):
    _, session = new_session(chat_stack, kind="cad")
    cid = session["chatSessionId"]
    for body in ({"text": ""}, {"text": "   "}, {}, {"text": 5}, {"txt": "x"}):
        response = chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json=body)
        assert (response.status_code, response.json()["code"]) == (400, 40001), body
    for body in ({}, {"interruptId": "que_000000000000"}, {"answer": "x"}):
        assert chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json=body).json()["code"] == 40001
    assert chat_stack.api("POST", f"/api/v1/chat/sessions/{cid}/answer", json={"interruptId": "../../x", "answer": "x"}).json()["code"] == 40400
    assert ok(chat_stack.api("GET", f"/api/v1/chat/sessions/{cid}/messages")) == []
