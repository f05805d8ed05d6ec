"""The chat panel against the real gateway and the agent on the local fake OpenAI server: Markdown sanitised, tool
cards with inputs and outputs that stay expanded across new frames (update by key), permission requests as
approve/reject cards, a frame that cannot be handled shown instead of swallowed, and the heartbeat watchdog that
reconnects a stream gone silent (the gateway process stopped with SIGSTOP: the TCP connection stays open, nothing
arrives)."""

import json
import signal

import pytest

from tests.browser.conftest import manage_shell, wait_model_open
from tests.e2e.stack import Stack
from tests.fake_openai import Reply
from tests.processes import signal_group

pytestmark = pytest.mark.e2e

WATCHDOG_SECONDS = 3


@pytest.fixture(scope="module")
def agent_stack(tmp_path_factory, fake):
    stack = Stack(tmp_path_factory.mktemp("chat"), workers=1, config={"llmAPIKey": "k", "llmBaseURL": fake.url, "llmModel": "fake"},
                  env={"VIEWER_SSE_HEARTBEAT_SECONDS": "1"}).start()
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def project(agent_stack):
    created = agent_stack.api("POST", "/api/v1/chat/projects", json={"title": "Chat house", "kind": "ifc"}).json()["data"]
    model_id = created["models"][0]
    assert agent_stack.wait_model(model_id)["status"] == "ready"
    return model_id


def open_chat(page, stack, model_id):
    page.add_init_script(f"localStorage.setItem('viewerSseWatchdogSeconds', '{WATCHDOG_SECONDS}')")
    events = []
    page.on("request", lambda request: "/events" in request.url and events.append(request))
    page.goto(f"{stack.url}/#model={model_id}")
    wait_model_open(page)
    page.click("[data-tab=chat]")
    page.locator("[data-testid=turn-state]", has_text="idle").wait_for()
    return events


def send(page, text):
    page.fill("[data-testid=chat-input]", text)
    page.click("[data-testid=send]")


def session_id(stack, model_id):
    """The chat session of the model's project (opened here when no client opened it yet)."""
    return stack.api("POST", "/api/v1/chat/sessions", json={"modelId": model_id}).json()["data"]["chatSessionId"]


def test_tool_cards_stay_expanded_across_frames_and_markdown_is_sanitised(page, agent_stack, fake, project):
    open_chat(page, agent_stack, project)
    fake.script(Reply().tool("get_params", {}), Reply().text("The **PARAMS** are shown above."))
    send(page, "Show the params")
    card = page.locator("[data-testid=tool-card][data-tool=get_params]")
    card.locator(".tool-status", has_text="completed").wait_for(timeout=30_000)
    page.locator("[data-testid=message-assistant] strong", has_text="PARAMS").wait_for(timeout=30_000)
    card.locator("summary").click()
    assert card.evaluate("(element) => element.open")
    assert "storey_height" in card.locator("[data-testid=tool-output]").inner_text()
    assert card.locator("[data-testid=tool-input]").inner_text().strip() == "{}"
    card.evaluate("(element) => { element.dataset.marker = 'kept'; }")
    page.shot("tool-card-open")

    fake.script(Reply().text('Second answer, with `code` and <img src="x" onerror="window.hacked = 1"> inside.'))
    send(page, "And now?")
    page.locator("[data-testid=message-assistant] code", has_text="code").wait_for(timeout=30_000)
    page.locator("[data-testid=turn-state]", has_text="idle").wait_for(timeout=30_000)
    # the same element, still open, after all the frames of a second turn
    assert card.get_attribute("data-marker") == "kept" and card.evaluate("(element) => element.open")
    assert page.evaluate("window.hacked") is None
    assert page.locator("[data-testid=messages] img[onerror]").count() == 0
    page.shot("second-turn")


def test_a_permission_request_is_answered_from_its_card(page, agent_stack, project):
    cid = session_id(agent_stack, project)

    def ask(interrupt_id, tool, tool_input):
        frame = {"sessionID": cid, "interruptId": interrupt_id, "question": f"May I run {tool}?", "header": "Permission",
                 "options": [{"label": "once", "description": ""}, {"label": "always", "description": ""}, {"label": "reject", "description": ""}],
                 "tool": {"messageID": "msg_test", "callID": f"call_{interrupt_id}"}, "kind": "permission",
                 "permission": {"tool": tool, "input": tool_input}}
        # the way the chat app keeps a pending question: its row (replayed to every new stream) and its frame
        manage_shell(agent_stack, f"""
import json
from chat_app import events
from chat_app.models import PendingQuestion
frame = json.loads({json.dumps(json.dumps(frame))})
PendingQuestion.objects.create(interrupt_id=frame["interruptId"], session_id="{cid}", frame=frame, message_id="msg_test", call_id=frame["tool"]["callID"])
events.record("{cid}", "question.ask", frame)
""")

    ask("que_00000000000a", "run_script", {"modelId": project})
    ask("que_00000000000b", "save_version", {"note": "from the agent"})
    # The answers are taken here, not by the server: these questions belong to no turn, and what the server does with
    # an answer to such a question (it resumes the session) is the agent's e2e tests' business, not the card's.
    answers, held = [], []

    def take_answer(route):
        answers.append(json.loads(route.request.post_data))
        held.append(route)

    def accept_held():
        for _ in range(200):  # the route handler runs while Playwright waits on the page
            if held:
                break
            page.wait_for_timeout(50)
        while held:
            held.pop().fulfill(status=200, content_type="application/json", body=json.dumps({"code": 0, "message": "ok", "data": {"accepted": True}}))

    page.route("**/api/v1/chat/sessions/*/answer", take_answer)
    open_chat(page, agent_stack, project)
    cards = page.locator("[data-testid=permission-card]")
    cards.first.wait_for(timeout=30_000)
    assert cards.count() == 2
    first = cards.filter(has_text="run_script")
    assert json.loads(first.locator("[data-testid=permission-input]").inner_text()) == {"modelId": project}
    page.shot("permission")
    first.locator("[data-testid=permission-once]").click()
    page.wait_for_function("document.querySelectorAll('[data-testid=permission-card]').length === 2")
    second = cards.filter(has_text="save_version")
    # the reviewer types a reason into the second card while the answer to the first is still on its way: the first
    # card going away must not take the focus (and the rest of the reason) from the second
    second.locator("[data-testid=permission-reason]").click()
    page.keyboard.type("not ")
    accept_held()
    page.wait_for_function("document.querySelectorAll('[data-testid=permission-card]').length === 1")
    page.keyboard.type("now")
    assert second.locator("[data-testid=permission-reason]").input_value() == "not now"
    second.locator("[data-testid=permission-reject]").click()
    accept_held()
    page.wait_for_function("document.querySelectorAll('[data-testid=permission-card]').length === 0")
    assert answers == [{"interruptId": "que_00000000000a", "answer": "once"}, {"interruptId": "que_00000000000b", "answer": "reject: not now"}]


def test_a_frame_that_cannot_be_handled_is_shown(page, agent_stack, fake, project):
    open_chat(page, agent_stack, project)
    cid = session_id(agent_stack, project)
    # a frame in the log that no part can be made of; the stream fetches it as a gap before the next live frame
    manage_shell(agent_stack, f"from chat_app import events\nevents.record('{cid}', 'message.part.updated', {{'sessionID': '{cid}', 'part': None}})")
    fake.script(Reply().text("fine"))
    send(page, "hello")
    error = page.locator("[data-testid=frame-error]")
    error.wait_for(timeout=30_000)
    assert "message.part.updated" in error.inner_text()
    page.locator("[data-testid=message-assistant]", has_text="fine").wait_for(timeout=30_000)  # later frames still handled
    page.shot("frame-error")


def test_the_watchdog_reconnects_a_silent_stream(page, agent_stack, fake, project):
    events = open_chat(page, agent_stack, project)
    page.wait_for_timeout((WATCHDOG_SECONDS + 2) * 1000)
    assert len(events) == 1, "heartbeats every second must keep a 3 s watchdog quiet"

    gateway = agent_stack.processes["gateway"].pid
    signal_group(gateway, signal.SIGSTOP)  # half-open: the connection stays, nothing comes
    try:
        page.wait_for_function("document.querySelector('[data-testid=connection]').dataset.state === 'reconnecting'", timeout=(WATCHDOG_SECONDS + 10) * 1000)
        page.shot("reconnecting")
    finally:
        signal_group(gateway, signal.SIGCONT)
    page.wait_for_function("document.querySelector('[data-testid=connection]').dataset.state === 'live'", timeout=30_000)
    assert len(events) >= 2
    assert events[-1].headers.get("last-event-id"), "the reconnect resumes where the stream left off"
    fake.script(Reply().text("still here"))
    send(page, "are you there")
    page.locator("[data-testid=message-assistant]", has_text="still here").wait_for(timeout=30_000)
