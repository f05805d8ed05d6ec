"""The chat's use cases in one process: turns run to completion inside the call (no server loop), so every frame
and record can be checked right after."""

import json

import pytest
from asgiref.sync import async_to_sync

from chat_app import events, services, turns
from chat_app.agent.scripted import ScriptedModel
from chat_app.models import ChatSession, Message, PendingQuestion, Project, SessionEvent
from models_app.models import IfcModel
from models_app.storage import model_dir
from tests.e2e.stack import free_port
from viewer_gateway.envelope import InvalidInput, NotFound, UpstreamError

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]


@pytest.fixture
def session():
    project = services.project_create(title="Plan", kind="cad")
    return services.session_open(project_id=project.id)


def frames(session_id, after=0):
    return events.frames_after(session_id, after)


def names(frame_list):
    return [f.event for f in frame_list if f.event != "message.part.delta"]


def collect(model, messages):
    async def run():
        return [chunk async for chunk in model.stream(messages, [])]

    return async_to_sync(run)()


def test_the_offline_model_is_deterministic():
    history = [{"role": "user", "content": "What now?"}]
    assert collect(ScriptedModel(0), history) == collect(ScriptedModel(0), history)
    asked = history + [
        {"role": "assistant", "content": "x", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "session_info", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "{}"},
    ]
    calls = [c for c in collect(ScriptedModel(0), asked) if type(c).__name__ == "ToolCallDelta"]
    assert calls[0].name == "ask_user" and json.loads("".join(c.arguments for c in calls))["question"]


def test_a_turn_is_recorded_in_order_and_ends_idle(session):
    assert services.message_post(session_id=session.id, text="Thicker walls") == {"accepted": True}
    log = frames(session.id)
    assert [f.seq for f in log] == list(range(1, len(log) + 1))
    assert names(log)[:2] == ["session.status", "message"] and names(log)[-2:] == ["session.status", "session.idle"]
    session.refresh_from_db()
    assert (session.status, session.runner, session.last_seq) == ("idle", "", len(log))
    listed = services.messages_list(session.id)
    assert [m["info"]["role"] for m in listed] == ["user", "assistant", "assistant"]
    tool = next(p for p in listed[1]["parts"] if p["type"] == "tool")
    assert tool["state"]["status"] == "completed" and tool["tool"] == "session_info"
    assert json.loads(tool["state"]["output"])["project"]["kind"] == "cad"


def test_messages_are_taken_in_order(session):
    services.message_post(session_id=session.id, text="first")
    services.message_post(session_id=session.id, text="second")
    users = [m for m in services.messages_list(session.id) if m["info"]["role"] == "user"]
    assert [m["parts"][0]["text"] for m in users] == ["first", "second"]


def test_opening_frames_replay_or_snapshot(session):
    services.message_post(session_id=session.id, text="hello")
    head = ChatSession.objects.get(pk=session.id).last_seq
    replay, delivered = events.opening_frames(session.id, str(head - 5))
    assert [f.seq for f in replay] == list(range(head - 4, head + 1)) and delivered == head
    fresh, _ = events.opening_frames(session.id, None)
    assert [f.event for f in fresh] == ["session.status"]
    for stale in ("999999", "-3", "abc"):
        snapshot, _ = events.opening_frames(session.id, stale)
        assert [f.event for f in snapshot] == ["message", "message", "message", "session.status"]
        assert all(f.seq == head for f in snapshot) and snapshot[0].data["resync"] is True


def test_a_question_waits_busy_and_resumes_with_the_answer(session):
    services.message_post(session_id=session.id, text="Which rating?")
    question = PendingQuestion.objects.get(session=session)
    session.refresh_from_db()
    assert (session.status, session.runner, question.state) == ("busy", "", "pending")
    fresh, _ = events.opening_frames(session.id, None)
    assert [f.event for f in fresh] == ["session.status", "question.ask"]
    with pytest.raises(NotFound):
        services.question_answer(session_id=session.id, interrupt_id="que_000000000000", answer="x")
    services.question_answer(session_id=session.id, interrupt_id=question.interrupt_id, answer="F90")
    assert services.question_answer(session_id=session.id, interrupt_id=question.interrupt_id, answer="F90") == {"accepted": True}
    with pytest.raises(NotFound):
        services.question_answer(session_id=session.id, interrupt_id=question.interrupt_id, answer="F30")
    session.refresh_from_db()
    assert session.status == "idle"
    final = services.messages_list(session.id)[-1]["parts"]
    assert any(p["type"] == "text" and p["text"] == "Noted: F90" for p in final)


def test_a_new_message_instead_of_an_answer_ends_the_question(session):
    services.message_post(session_id=session.id, text="Why?")
    question = PendingQuestion.objects.get(session=session)
    services.message_post(session_id=session.id, text="never mind")
    question.refresh_from_db()
    assert question.state == "rejected"
    asked = next(p for m in services.messages_list(session.id) for p in m["parts"] if p.get("tool") == "ask_user")
    assert asked["state"]["status"] == "error" and "new message" in asked["state"]["error"]
    assert ChatSession.objects.get(pk=session.id).status == "idle"


def test_abort_of_a_waiting_turn_and_of_an_idle_session(session):
    assert services.turn_abort(session.id) == {"aborted": False}
    services.message_post(session_id=session.id, text="Is it F90?")
    assert services.turn_abort(session.id) == {"aborted": True}
    assert PendingQuestion.objects.get(session=session).state == "rejected"
    assert ChatSession.objects.get(pk=session.id).status == "idle"
    assert names(frames(session.id))[-2:] == ["session.status", "session.idle"]
    asked = next(p for m in services.messages_list(session.id) for p in m["parts"] if p.get("tool") == "ask_user")
    assert asked["state"]["error"] == "Tool execution aborted" and asked["state"]["metadata"] == {"interrupted": True}


def test_a_turn_cut_by_a_restart_ends_with_session_error(session):
    message = Message.objects.create(id="msg_000000000001aaaaaaaa", session=session, role="assistant",
                                     info={"id": "msg_000000000001aaaaaaaa", "role": "assistant", "time": {"created": 1}})
    ChatSession.objects.filter(pk=session.id).update(status="busy", runner="some-host-that-died:1:1", heartbeat_at=None)
    assert turns.recover_cut_turns() == [session.id]
    session.refresh_from_db()
    assert (session.status, session.runner) == ("idle", "")
    assert names(frames(session.id))[-3:] == ["session.error", "session.status", "session.idle"]
    message.refresh_from_db()
    assert message.info["error"]["name"] == "UnknownError" and message.info["time"]["completed"]


def test_bad_inputs_change_nothing(session):
    for text in ("", "   "):
        with pytest.raises(InvalidInput):
            services.message_post(session_id=session.id, text=text)
    for bad in ("c_123", "../x", "c_ffffffffffffffff"):
        with pytest.raises(NotFound):
            services.message_post(session_id=bad, text="x")
    with pytest.raises(InvalidInput):
        services.session_open(project_id="p_0000000000000000")
    assert SessionEvent.objects.count() == 0 and Message.objects.count() == 0


def test_an_unreachable_edit_service_fails_project_creation_without_leftovers(viewer_config, settings):
    viewer_config(editServiceURL=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(UpstreamError):
        services.project_create(title="x", kind="ifc")
    assert Project.objects.count() == 0 and IfcModel.objects.count() == 0
    assert list((model_dir("m_0000000000000000").parent).iterdir()) == []


def test_deleting_a_project_deletes_its_models_and_session(session):
    model = IfcModel.objects.create(name="a.ifc", status="ready")
    model_dir(model.id).mkdir()
    services.project_add_model(session.project, model)
    services.message_post(session_id=session.id, text="hello")
    services.project_delete(session.project_id)
    assert not IfcModel.objects.filter(pk=model.id).exists() and not model_dir(model.id).exists()
    assert ChatSession.objects.count() == 0 and SessionEvent.objects.count() == 0 and Message.objects.count() == 0
