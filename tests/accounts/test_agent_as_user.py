"""The agent acts as the user who wrote the message (issue 33, item 7): a viewer cannot talk to it, every tool call
is decided for the message's author at the moment it runs (a membership removed or lowered mid-session refuses the
next call, a permitted save included), a refusal is a tool error the model reads, only someone allowed to make the
guarded call may answer a permission request, and what the agent writes is signed "agent on behalf of <user>".

Turns run in this process against the local OpenAI-compatible server (tests/fake_openai.py) and a fake edit service;
a message is posted as the chat route posts it (services.message_post with the request's principal)."""

from __future__ import annotations

import json

import pytest

from accounts_app.models import ProjectMember
from accounts_app.policy import Forbidden
from api.principal import Principal, Via
from chat_app import services
from chat_app.models import PendingQuestion, Turn
from issues_app.models import Issue
from models_app.storage import model_dir
from tests.accounts.people import error, person, post, project_with_models, signed_in
from tests.fake_openai import Reply
from tests.proxy.test_proxy_faults import SAVE_ANSWER, FakeEditService

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]


@pytest.fixture
def edit_service(viewer_config):
    service = FakeEditService()
    service.body = SAVE_ANSWER
    viewer_config(editServiceURL=service.url)
    yield service
    service.close()


@pytest.fixture
def team(fake, viewer_config, edit_service):
    """A project with one model and its chat session; owen owns it, ana edits, bob reviews, vera views."""
    fake.replies.clear()
    fake.requests.clear()
    viewer_config(llmAPIKey="test-key", llmBaseURL=fake.url, llmModel="fake-model")
    project, (model,) = project_with_models("Tower", models=1)
    model_dir(model.id).mkdir(parents=True)
    people = {}
    for name, role in (("owen", "owner"), ("ana", "editor"), ("bob", "reviewer"), ("vera", "viewer")):
        people[name] = person(name)
        ProjectMember.objects.create(project=project, user=people[name], role=role)
    session = services.session_open(project_id=project.id)
    return {"project": project, "model": model, "session": session, "people": people}


def principal(user) -> Principal:
    """The principal the access middleware gives a signed-in user."""
    return Principal(name=user.get_username(), via=Via.SESSION, user_id=user.pk, role="user")


def say(team, name: str, text: str) -> None:
    services.message_post(session_id=team["session"].id, text=text, author=principal(team["people"][name]))


def tool_results(fake) -> dict[str, str]:
    """What the model was told each tool call gave, from the last request it got."""
    return {m["tool_call_id"]: m["content"] for m in fake.requests[-1]["body"]["messages"] if m["role"] == "tool"}


def set_role(team, name: str, role: str | None) -> None:
    members = ProjectMember.objects.filter(project=team["project"], user=team["people"][name])
    members.update(role=role) if role else members.delete()


def test_a_viewer_cannot_talk_to_the_agent_nor_answer_it(team):
    cid = team["session"].id
    vera = signed_in(team["people"]["vera"])
    assert "may not edit" in error(post(vera, f"/api/v1/chat/sessions/{cid}/messages", {"text": "delete everything"}), 403, 40300)
    assert "may not edit" in error(post(vera, f"/api/v1/chat/sessions/{cid}/answer", {"interruptId": "que_000000000000", "answer": "once"}), 403, 40300)
    assert not Turn.objects.exists()
    assert signed_in(team["people"]["vera"]).get(f"/api/v1/chat/sessions/{cid}/messages").status_code == 200  # reading is viewing


def test_a_message_posted_over_the_route_keeps_its_author(team, fake):
    """The chat route hands the request's principal to the use case (chat_app/views.py: message_post(author=...))."""
    fake.script(Reply().text("Hello."))
    ana = signed_in(team["people"]["ana"])
    assert post(ana, f"/api/v1/chat/sessions/{team['session'].id}/messages", {"text": "hello"}).json()["data"] == {"accepted": True}
    assert (Turn.objects.get().username, Turn.objects.get().user_id) == ("ana", team["people"]["ana"].pk)


def test_the_turn_keeps_its_author_and_the_agent_signs_on_its_behalf(team, fake):
    fake.script(Reply().tool("create_issue", {"title": "Door too narrow"}), Reply().text("Pinned."))
    say(team, "ana", "pin the narrow door")
    turn = Turn.objects.get()
    assert (turn.username, turn.user_id, turn.outcome) == ("ana", team["people"]["ana"].pk, "completed")
    issue = Issue.objects.get(model=team["model"])
    assert (issue.author, issue.author_verified, issue.provenance) == ("agent on behalf of ana", True, "AI")


def test_a_save_the_agent_makes_is_signed_on_behalf_of_the_user(team, fake, edit_service):
    fake.script(Reply().tool("save_version", {"note": "wider door"}, call_id="call_save"), Reply().text("Saved."))
    say(team, "ana", "save it")
    question = PendingQuestion.objects.get()
    services.question_answer(session_id=team["session"].id, interrupt_id=question.pk, answer="once", principal=principal(team["people"]["owen"]))
    saves = [json.loads(body) for method, path, body in edit_service.received if path.endswith("/script/save")]
    assert [save["author"] for save in saves] == ["agent on behalf of ana"]
    assert json.loads(tool_results(fake)["call_save"])["version"] == SAVE_ANSWER["version"]


@pytest.mark.parametrize(("role", "tool", "arguments", "why"), [
    ("reviewer", "run_script", {}, "your role in this project (reviewer) may not edit"),
    ("viewer", "create_issue", {"title": "x"}, "your role in this project (viewer) may not review"),
    (None, "get_script", {}, "not found"),  # no longer a member: the model is not even visible
])
def test_an_editor_demoted_mid_session_is_refused_the_next_call(team, fake, edit_service, role, tool, arguments, why):
    fake.script(Reply().tool("list_issues", {}, call_id="call_read"), Reply().text("No issues."))
    say(team, "ana", "what is open?")
    assert tool_results(fake)["call_read"] == "[]"  # the editor may read

    set_role(team, "ana", role)
    received = len(edit_service.received)
    fake.script(Reply().tool(tool, arguments, call_id="call_refused"), Reply().text("I may not."))
    say(team, "ana", "go on")
    refusal = tool_results(fake)["call_refused"]
    assert refusal.startswith(f"Error: refused: {tool} needs the") and "ana (for whom you act)" in refusal and why in refusal, refusal
    assert len(edit_service.received) == received and not Issue.objects.exists()  # nothing reached the edit service or the records
    assert Turn.objects.order_by("id").last().outcome == "completed"  # a refusal is the model's to read, not a crash


def test_a_permitted_save_is_refused_when_its_author_lost_the_right_meanwhile(team, fake, edit_service):
    fake.script(Reply().tool("save_version", {"note": "wider door"}, call_id="call_save"), Reply().text("Not saved."))
    say(team, "ana", "save it")
    question = PendingQuestion.objects.get()
    assert (question.kind, question.guarded_capability, question.guarded_model_id) == ("permission", "edit", team["model"].id)

    set_role(team, "ana", "reviewer")  # while the question waits
    services.question_answer(session_id=team["session"].id, interrupt_id=question.pk, answer="once", principal=principal(team["people"]["owen"]))
    assert "may not edit" in tool_results(fake)["call_save"]
    assert not [path for method, path, body in edit_service.received if path.endswith("/script/save")]


def test_only_someone_allowed_to_make_the_guarded_call_may_answer_it(team, fake):
    fake.script(Reply().tool("save_version", {"note": "wider door"}), Reply().text("Saved."))
    say(team, "ana", "save it")
    question = PendingQuestion.objects.get()
    cid = team["session"].id
    bob = signed_in(team["people"]["bob"])  # a reviewer: the route refuses first
    assert "may not edit" in error(post(bob, f"/api/v1/chat/sessions/{cid}/answer", {"interruptId": question.pk, "answer": "once"}), 403, 40300)
    with pytest.raises(Forbidden, match="may not edit"):  # and so does the use case, whoever calls it
        services.question_answer(session_id=cid, interrupt_id=question.pk, answer="once", principal=principal(team["people"]["bob"]))
    question.refresh_from_db()
    assert question.state == "pending"


def test_a_disabled_account_is_refused_every_call(team, fake):
    fake.script(Reply().text("Hello."))
    say(team, "ana", "hello")
    ana = team["people"]["ana"]
    ana.is_active = False
    ana.save(update_fields=["is_active"])
    fake.script(Reply().tool("list_issues", {}, call_id="call_read"), Reply().text("I may not."))
    say(team, "ana", "what is open?")
    assert "the account 'ana' that wrote this message is disabled or deleted" in tool_results(fake)["call_read"]


def test_a_turn_no_account_wrote_acts_as_before(team, fake):
    """The operator's token and the open mode: the message has no account, the agent is unrestricted and signs 'agent'."""
    fake.script(Reply().tool("create_issue", {"title": "Door"}), Reply().text("Pinned."))
    services.message_post(session_id=team["session"].id, text="pin it", author=Principal(name="api-token", via=Via.OPERATOR))
    assert Turn.objects.get().username is None
    issue = Issue.objects.get()
    assert (issue.author, issue.author_verified) == ("agent", False)
