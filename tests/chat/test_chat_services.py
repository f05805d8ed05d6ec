"""The chat's use cases in one process: turns run to completion inside the call (no server loop), so every frame
and record can be checked right after. The language model is the offline one: an ordinary message gets the note that
no language model is configured; "demo" starts the demonstration, which asks for permission to copy the model of
an ifc project (demo_copy). No edit service runs, so a permitted copy fails."""

import json

import pytest
from asgiref.sync import async_to_sync

from chat_app import events, lifecycle, services
from chat_app.agent.element_tools import storeys_by_id
from chat_app.agent.scripted import OFFLINE_NOTE, ScriptedModel, visible_change
from chat_app.models import ChatSession, Message, PendingQuestion, SessionEvent, Turn
from core.errors import Invalid, NotFound, Upstream
from models_app import project_services
from models_app.models import IfcModel, Project
from models_app.storage import model_dir
from tests.e2e.stack import free_port

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]


@pytest.fixture
def session(viewer_config):
    """The session of an ifc project with its model (a record and a folder: nothing can build it here)."""
    viewer_config(editServiceURL=f"http://127.0.0.1:{free_port()}")  # nothing listens: a call fails at once
    project = Project.objects.create(title="Plan", kind="ifc")
    model = IfcModel.objects.create(name="Plan.ifc", status="ready")
    model_dir(model.id).mkdir()
    project_services.project_add_model(project, model)
    return services.session_open(project_id=project.id)


@pytest.fixture
def lone_session():
    """A session without project or model."""
    return services.session_open(title="alone")


def frames(session_id, after=0):
    return events.frames_after(session_id, after)


def names(frame_list):
    return [f.event for f in frame_list if f.event != "message.part.delta"]


def collect(model, messages):
    async def run():
        return [chunk async for chunk in model.stream(messages, [])]

    return async_to_sync(run)()


def next_call(history):
    calls = [c for c in collect(ScriptedModel(0), history) if type(c).__name__ == "ToolCallDelta"]
    return (calls[0].name, json.loads("".join(c.arguments for c in calls))) if calls else None


def answered(history, name, result):
    call_id = f"c{len(history)}"
    return history + [
        {"role": "assistant", "content": "x", "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def test_the_offline_demonstration_is_deterministic_and_works_on_a_copy():
    history = [{"role": "user", "content": " Run the demo. "}]
    assert collect(ScriptedModel(0), history) == collect(ScriptedModel(0), history)
    assert next_call(history) == ("session_info", {})
    ifc = json.dumps({"project": {"kind": "ifc"}, "model": {"id": "m_1", "name": "Haus.ifc"}, "models": [{"id": "m_1"}]})
    history = answered(history, "session_info", ifc)
    assert next_call(history) == ("demo_copy", {})  # the session's model, copied
    assert next_call(answered(history, "demo_copy", "[Tool execution was interrupted]")) is None  # no copy: never the model
    history = answered(history, "demo_copy", json.dumps({"modelId": "m_2", "copyOf": "m_1"}))
    assert next_call(history) == ("get_params", {"modelId": "m_2"})  # from here on, the copy only
    history = answered(history, "get_params", json.dumps({"name": "x", "storeys": 1, "length": 10.0}))
    assert next_call(history) == ("set_params", {"modelId": "m_2", "params": {"name": "x", "storeys": 2, "length": 10.0}, "note": "offline demo: storeys 1 -> 2"})
    history = answered(history, "set_params", "PARAMS staged")
    assert next_call(history) == ("run_script", {"modelId": "m_2"})
    history = answered(history, "run_script", "Sandbox run succeeded\nStaging diff summary: elements added 6")
    assert next_call(history) == ("save_version", {"modelId": "m_2", "note": "offline demo"})
    assert next_call(answered(history, "save_version", json.dumps({"version": "v2"}))) is None
    assert next_call(answered(history, "save_version", "Error: The user rejected this call.")) is None
    assert visible_change({"flag": True, "wall_height": 3.0}) == ("wall_height", 3.0, 3.5)
    for elsewhere in ({"project": {"kind": "cad"}, "model": None}, {"project": None, "model": {"id": "m_1"}}):  # no ifc project's model to copy
        assert next_call(answered([{"role": "user", "content": "demo"}], "session_info", json.dumps(elsewhere))) is None


def test_only_the_demonstration_by_name_calls_a_tool():
    for text in ("show me", "Make the walls thicker", "demo please", "what is the demo?", "demonstration", ""):
        chunks = collect(ScriptedModel(0), [{"role": "user", "content": text}])
        assert next_call([{"role": "user", "content": text}]) is None, text
        assert "".join(c.text for c in chunks if type(c).__name__ == "TextDelta").split() == OFFLINE_NOTE.split()
    for text in ("demo", "DEMO", "run the demo", "Run the demo!", "  demo.  "):
        assert next_call([{"role": "user", "content": text}]) == ("session_info", {}), text


def test_a_turn_is_recorded_in_order_and_ends_idle(lone_session):
    session = lone_session
    assert services.message_post(session_id=session.id, text="Thicker walls") == {"accepted": True}
    log = frames(session.id)
    assert [f.seq for f in log] == list(range(1, len(log) + 1))
    assert names(log)[:3] == ["session.creating", "session.status", "message"] and names(log)[-2:] == ["session.status", "session.idle"]
    assert log[0].data == {"sessionID": session.id, "projectId": "", "modelId": ""}
    session.refresh_from_db()
    assert (session.status, session.last_seq) == ("idle", len(log))
    assert list(Turn.objects.values_list("state", "outcome")) == [("finished", "completed")]
    listed = services.messages_list(session.id)
    assert [m["info"]["role"] for m in listed] == ["user", "assistant"]
    assert not [p for p in listed[1]["parts"] if p["type"] == "tool"]
    assert "No language model is configured" in listed[1]["parts"][1]["text"]


def test_messages_are_taken_in_order(lone_session):
    services.message_post(session_id=lone_session.id, text="first")
    services.message_post(session_id=lone_session.id, text="second")
    users = [m for m in services.messages_list(lone_session.id) if m["info"]["role"] == "user"]
    assert [m["parts"][0]["text"] for m in users] == ["first", "second"]


def test_a_message_taken_while_a_turn_waits_is_queued_and_listed_after_it(session):
    services.message_post(session_id=session.id, text="demo")  # waits for the permission of demo_copy
    question = PendingQuestion.objects.get(session=session)
    # taken while the turn waits for its answer: it comes instead of the answer
    services.message_post(session_id=session.id, text="never mind")
    question.refresh_from_db()
    assert question.state == "rejected"
    users = [m for m in services.messages_list(session.id) if m["info"]["role"] == "user"]
    assert [m["parts"][0]["text"] for m in users] == ["demo", "never mind"]
    assert list(Turn.objects.order_by("id").values_list("outcome", flat=True))[:1] == ["interrupted"]


def test_a_queued_message_is_listed_as_queued_and_starts_after_the_turn_before_it(lone_session):
    session = lone_session
    services.message_post(session_id=session.id, text="first")
    first_ids = [m["info"]["id"] for m in services.messages_list(session.id)]
    queued = lifecycle.enqueue(session.id, "second")  # taken, not yet started (no drain ran)
    listed = services.messages_list(session.id)
    assert listed[-1]["info"]["queued"] is True and listed[-1]["parts"][0]["text"] == "second"
    assert listed[-1]["info"]["id"] == queued.queued_message_id
    lifecycle.wake(session.id)
    listed = services.messages_list(session.id)
    second = next(m for m in listed if m["info"]["role"] == "user" and m["parts"][0]["text"] == "second")
    assert "queued" not in second["info"] and second["info"]["id"] > max(first_ids)  # after every message of turn 1


def test_opening_frames_replay_or_snapshot(lone_session):
    session = lone_session
    services.message_post(session_id=session.id, text="hello")
    head = ChatSession.objects.get(pk=session.id).last_seq
    replay, delivered = events.opening_frames(session.id, str(head - 5))
    assert [f.seq for f in replay] == list(range(head - 4, head + 1)) and delivered == head
    assert [f.event for f in events.opening_frames(session.id, "0")[0]][:1] == ["session.creating"]
    fresh, _ = events.opening_frames(session.id, None)
    assert [f.event for f in fresh] == ["session.status"]
    for stale in ("999999", "-3", "abc", "9" * 5000, "1" * 19, "1.5", " ", "１２", "٣", "0x10", "1e3", "\x00"):
        snapshot, _ = events.opening_frames(session.id, stale)
        assert [f.event for f in snapshot] == ["message", "message", "session.status"], stale[:20]
        assert all(f.seq == head for f in snapshot) and snapshot[0].data["resync"] is True


def test_a_permission_request_waits_busy_and_a_rejection_reaches_the_model(session):
    services.message_post(session_id=session.id, text="demo")
    question = PendingQuestion.objects.get(session=session)
    turn = Turn.objects.get(session=session)
    assert (session.status, turn.state, turn.runner, question.state, question.kind) == ("busy", "waiting", "", "pending", "permission")
    frame = question.frame
    assert frame["kind"] == "permission" and frame["permission"] == {"tool": "demo_copy", "input": {}}
    assert [o["label"] for o in frame["options"]] == ["once", "always", "reject"] and frame["custom"] is True
    assert frame["tool"]["callID"] and frame["tool"]["messageID"] and "subagentId" not in frame
    fresh, _ = events.opening_frames(session.id, None)
    assert [f.event for f in fresh] == ["session.status", "question.ask"]
    with pytest.raises(NotFound):
        services.question_answer(session_id=session.id, interrupt_id="que_000000000000", answer="once")
    with pytest.raises(Invalid):
        services.question_answer(session_id=session.id, interrupt_id=question.interrupt_id, answer="maybe")
    services.question_answer(session_id=session.id, interrupt_id=question.interrupt_id, answer="reject: not today")
    assert services.question_answer(session_id=session.id, interrupt_id=question.interrupt_id, answer="reject: not today") == {"accepted": True}
    with pytest.raises(NotFound):
        services.question_answer(session_id=session.id, interrupt_id=question.interrupt_id, answer="once")
    assert session.status == "idle" and IfcModel.objects.count() == 1  # no copy
    call = next(p for m in services.messages_list(session.id) for p in m["parts"] if p.get("tool") == "demo_copy")
    assert call["state"]["status"] == "error" and call["state"]["error"] == "The user rejected this call: not today"
    final = services.messages_list(session.id)[-1]["parts"]
    assert any(p["type"] == "text" and "not today" in p["text"] for p in final)  # the model read the reason


def test_always_allows_the_tool_for_the_session(session):
    services.message_post(session_id=session.id, text="demo")
    question = PendingQuestion.objects.get(session=session)
    services.question_answer(session_id=session.id, interrupt_id=question.interrupt_id, answer="Always")
    session.refresh_from_db()
    assert session.allowed_tools == ["demo_copy"]
    call = next(p for m in services.messages_list(session.id) for p in m["parts"] if p.get("tool") == "demo_copy")
    assert call["state"]["status"] == "error" and "edit service" in call["state"]["error"]  # it ran (and failed: no edit service)
    services.message_post(session_id=session.id, text="demo")
    assert PendingQuestion.objects.filter(session=session).count() == 1  # no second request for demo_copy


def test_abort_of_a_waiting_turn_and_of_an_idle_session(session):
    assert services.turn_abort(session.id) == {"aborted": False}
    services.message_post(session_id=session.id, text="demo")
    assert services.turn_abort(session.id) == {"aborted": True}
    assert PendingQuestion.objects.get(session=session).state == "rejected"
    assert session.status == "idle" and Turn.objects.get().outcome == "aborted"
    assert names(frames(session.id))[-2:] == ["session.status", "session.idle"]
    asked = next(p for m in services.messages_list(session.id) for p in m["parts"] if p.get("tool") == "demo_copy")
    assert asked["state"]["error"] == "Tool execution aborted" and asked["state"]["metadata"] == {"interrupted": True}


def test_a_turn_cut_by_a_restart_ends_with_session_error(session):
    turn = Turn.objects.create(session=session, text="x", queued_message_id="msg_000000000000aaaaaaaa", state="running", runner="some-host-that-died:1:1")
    message = Message.objects.create(id="msg_000000000001aaaaaaaa", session=session, turn=turn, role="assistant",
                                     info={"id": "msg_000000000001aaaaaaaa", "role": "assistant", "time": {"created": 1}})
    assert lifecycle.recover_cut_turns() == [session.id]
    turn.refresh_from_db()
    assert (session.status, turn.state, turn.outcome, turn.runner) == ("idle", "finished", "cut", "")
    assert names(frames(session.id))[-3:] == ["session.error", "session.status", "session.idle"]
    message.refresh_from_db()
    assert message.info["error"]["name"] == "UnknownError" and message.info["time"]["completed"]


def test_one_active_turn_per_session_is_a_database_rule(lone_session):
    from django.db import IntegrityError, transaction

    Turn.objects.create(session=lone_session, text="a", queued_message_id="msg_a", state="waiting")
    with pytest.raises(IntegrityError), transaction.atomic():
        Turn.objects.create(session=lone_session, text="b", queued_message_id="msg_b", state="running")


def test_bad_inputs_change_nothing(session):
    for text in ("", "   "):
        with pytest.raises(Invalid):
            services.message_post(session_id=session.id, text=text)
    for bad in ("c_123", "../x", "c_ffffffffffffffff"):
        with pytest.raises(NotFound):
            services.message_post(session_id=bad, text="x")
    with pytest.raises(Invalid):
        services.session_open(project_id="p_0000000000000000")
    assert SessionEvent.objects.filter(session=session).exclude(event="session.creating").count() == 0 and Message.objects.count() == 0
    assert Turn.objects.count() == 0


def test_an_unreachable_edit_service_fails_project_creation_without_leftovers(viewer_config, settings):
    viewer_config(editServiceURL=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(Upstream):
        project_services.project_create(title="x", kind="ifc")
    assert Project.objects.count() == 0 and IfcModel.objects.count() == 0
    assert list((model_dir("m_0000000000000000").parent).iterdir()) == []


def test_deleting_a_project_deletes_its_models_and_session(session):
    model = IfcModel.objects.create(name="a.ifc", status="ready")
    model_dir(model.id).mkdir()
    project_services.project_add_model(session.project, model)
    assert (model_dir(model.id) / "model.project").read_text() == session.project_id
    services.message_post(session_id=session.id, text="demo")  # waits for a permission
    project_services.project_delete(session.project_id)
    assert not IfcModel.objects.filter(pk=model.id).exists() and not model_dir(model.id).exists()
    assert ChatSession.objects.count() == 0 and SessionEvent.objects.count() == 0 and Message.objects.count() == 0 and Turn.objects.count() == 0


def test_the_storey_walk_survives_parent_loops():
    objects = [
        {"id": "P", "type": "IfcProject"}, {"id": "B", "type": "IfcBuilding", "parent": "P"},
        {"id": "S", "type": "IfcBuildingStorey", "name": "Ground", "parent": "B"}, {"id": "W", "type": "IfcWall", "parent": "S"},
        {"id": "D", "type": "IfcDoor", "parent": "W"}, {"id": "X", "type": "IfcWall", "parent": "X"},
        {"id": "Y", "type": "IfcSlab", "parent": "Z"}, {"id": "Z", "type": "IfcSlab", "parent": "Y"}, {"id": "Q", "type": "IfcBeam", "parent": "Y"},
    ]
    assert storeys_by_id(objects) == {"P": "", "B": "", "S": "", "W": "Ground", "D": "Ground", "X": "", "Y": "", "Z": "", "Q": ""}


def test_a_viewer_frame_that_cannot_be_delivered_is_followed_by_notify_failed(session, monkeypatch):
    from models_app.signals import project_event

    class BrokenLayer:
        async def group_send(self, group, message):
            if message["event"].startswith("viewer."):
                raise ConnectionError("the channel layer is down")

    monkeypatch.setattr(events, "get_channel_layer", lambda: BrokenLayer())
    project_event.send(sender=None, project_id=session.project_id, event="viewer.committed", data={"modelId": "m_0000000000000001", "kind": "ifc", "version": "v2"})
    committed, failed = frames(session.id)[-2:]
    assert committed.event == "viewer.committed" and committed.data["version"] == "v2"
    assert failed.event == "viewer.notify_failed" and failed.data == {
        "sessionID": session.id, "modelId": "m_0000000000000001", "event": "viewer.committed", "error": "ConnectionError: the channel layer is down"}


def test_a_project_event_raised_for_a_sub_agent_carries_its_id(session):
    from models_app.signals import project_event

    token = events.frame_origin.set("sa_000000000001")
    try:
        project_event.send(sender=None, project_id=session.project_id, event="viewer.committed", data={"modelId": "m_0000000000000001", "kind": "ifc", "version": "v2"})
    finally:
        events.frame_origin.reset(token)
    assert frames(session.id)[-1].data["subagentId"] == "sa_000000000001"
