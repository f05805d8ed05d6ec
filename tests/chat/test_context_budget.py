"""The context budget: estimates, cut tool outputs, compaction of older turns (the current turn and its pending
question stay verbatim), usage and cost per message and per session."""

import pytest

from chat_app import services
from chat_app.agent import context
from chat_app.agent.loop import build_history
from chat_app.models import ChatSession, Message, Part, PendingQuestion, Turn, sortable_id

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

LONG = "The walls of the north wing need a fire rating check against the plan. " * 40  # about 800 tokens


def add_turn(session, number: int, *, question: bool = False) -> Turn:
    turn = Turn.objects.create(session=session, text=f"turn {number}", queued_message_id=sortable_id("msg_"), state="waiting" if question else "finished")
    user = Message.objects.create(id=sortable_id("msg_"), session=session, turn=turn, role="user", info={})
    Part.objects.create(id=sortable_id("prt_"), message=user, type="text", data={"type": "text", "text": f"question {number}: {LONG}"})
    answer = Message.objects.create(id=sortable_id("msg_"), session=session, turn=turn, role="assistant", info={})
    call = {"type": "tool", "callID": f"call_{number}", "tool": "ask_user" if question else "get_script",
            "state": {"status": "running", "input": {"question": "Save?"}} if question else {"status": "completed", "input": {}, "output": LONG * 3, "title": "read the script"}}
    Part.objects.create(id=sortable_id("prt_"), message=answer, type="tool", data=call)
    if question:
        PendingQuestion.objects.create(session=session, turn=turn, message_id=answer.id, call_id=f"call_{number}", frame={"question": "Save?"})
    else:
        Part.objects.create(id=sortable_id("prt_"), message=answer, type="text", data={"type": "text", "text": f"answer {number}"})
    return turn


def test_estimates_err_on_the_safe_side():
    assert context.estimate_tokens("") == 0
    assert context.estimate_tokens("a" * 35) == 10
    assert context.estimate_tokens("防火等级") == 4
    cut = context.cut_text("x" * 10_000, 100)
    assert context.estimate_tokens(cut) <= 100 + 30 and "cut to fit the context budget" in cut


def test_a_history_past_the_budget_is_compacted_and_the_current_turn_kept_verbatim(viewer_config):
    viewer_config(llmContextTokens=10000)
    session = services.session_open(title="long")
    for number in range(1, 7):
        add_turn(session, number)
    current = add_turn(session, 7, question=True)
    before = context.request_tokens(build_history(session.id), [])
    assert before > context.budget()
    history, compacted = context.fitted_history(session.id, current.id, "system prompt", [], build_history)
    assert compacted and context.request_tokens(history, []) <= context.budget()
    assert history[0]["role"] == "system" and history[1]["content"].startswith("Summary of the earlier conversation")
    assert "- User: question 1:" in history[1]["content"] and "get_script -> read the script" in history[1]["content"]
    kept_users = [m["content"][:11] for m in history if m["role"] == "user"][1:]
    assert kept_users == ["question 6:", "question 7:"]  # the last turns, verbatim
    assert history[-2]["tool_calls"][0]["function"]["name"] == "ask_user" and history[-1]["role"] == "tool"  # the pending question
    assert PendingQuestion.objects.get(turn=current).state == "pending"
    # every record stays for people; the compacted ones are no longer sent
    listed = services.messages_list(session.id)
    assert len(listed) == 15 and sum(1 for m in listed if m["info"].get("summary")) == 1
    assert Message.objects.filter(compacted=True).count() == 10
    summary = next(m for m in listed if m["info"].get("summary"))
    assert listed.index(summary) == 10 and summary["parts"][0]["compacted"]["messages"] == 10  # right before the kept turns


def test_long_tool_outputs_are_cut(viewer_config):
    viewer_config(llmContextTokens=8000)
    session = services.session_open(title="outputs")
    add_turn(session, 1)
    history, compacted = context.fitted_history(session.id, None, "", [], build_history)
    tool = next(m for m in history if m["role"] == "tool")
    assert not compacted and "cut to fit the context budget" in tool["content"] and context.estimate_tokens(tool["content"]) < 1100


def test_a_compacted_session_goes_on_with_its_next_turn(viewer_config, monkeypatch):
    monkeypatch.setattr("chat_app.agent.scripted.PIECE_DELAY_SECONDS", 0)
    viewer_config(llmContextTokens=4000)
    session = services.session_open(title="goes on")
    for number in range(1, 6):
        add_turn(session, number)
    services.message_post(session_id=session.id, text="and now?")
    assert Message.objects.filter(compacted=True).exists()
    latest = Turn.objects.order_by("-id").first()
    assert (latest.state, latest.outcome) == ("finished", "completed")
    assert "No language model is configured" in services.messages_list(session.id)[-1]["parts"][1]["text"]


def test_usage_per_message_and_per_session_with_prices(viewer_config, monkeypatch):
    monkeypatch.setattr("chat_app.agent.scripted.PIECE_DELAY_SECONDS", 0)
    viewer_config(llmPricePerMTokIn=2.0, llmPricePerMTokOut=8.0)
    session = services.session_open(title="costs")
    services.message_post(session_id=session.id, text="hello")
    steps = [m["info"] for m in services.messages_list(session.id) if m["info"]["role"] == "assistant"]
    assert len(steps) == 1 and all(s["tokens"]["input"] > 0 and s["cost"] > 0 for s in steps)
    usage = ChatSession.objects.get(pk=session.id).usage
    assert usage["steps"] == 1 and usage["input"] == sum(s["tokens"]["input"] for s in steps)
    assert usage["cost"] == pytest.approx(sum(s["cost"] for s in steps))
    assert context.cost_of({"input": 1_000_000, "output": 500_000, "reasoning": 100, "cache": {"read": 1_000_000, "write": 0}}) == 2.0 + 2.0 + 4.0
