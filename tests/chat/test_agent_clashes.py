"""The agent closes the coordination loop (issue 34, item 8): asked to resolve the clashes between the ducts and the
beams, it lists the tests, runs the test on the current versions, changes the services model's build script (PARAMS)
through the script tools, runs it, runs the test again on the staged products, reports which clashes are resolved and
which are new, and asks before it saves.

The turn runs in this process against the local OpenAI-compatible server (tests/fake_openai.py). The edit service is a
local stand-in that answers the script routes the way the real one does and, on a run, writes the staged product
(model.ifc) the script would build: the services model with duct D1 lowered under the beams. The clash runs are real:
the run on the current versions is run by a clash worker (a thread here running queued runs as the worker process
does), the staged run by the tool itself, each model.ifc meshed and clashed by the engine."""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import pytest
from django.db import connection

from api.signatures import Signature
from chat_app import services
from chat_app.agent.clash_tools import run_clash_test
from chat_app.agent.tools import ToolCall
from chat_app.models import PendingQuestion, Turn
from coordination_app.models import ClashRun, ClashSighting
from coordination_app.services.runs import clash_run_now
from core.cancellation import CancelGuard, Cancelled, cancellable
from models_app.public import model_dir
from tests.coordination.clash_helpers import write_boxes_ifc
from tests.coordination.clash_setup import B1, B2, D1, D2, DUCT_D1_LOWERED, boxes_of, ducts, federated_project, run_test
from tests.fake_openai import Reply
from tests.proxy.test_proxy_faults import FakeEditService, serving

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

PARAMS_DIFF = {"params": {"changed": {"duct_d1_z": {"old": 3.1, "new": 1.0}}, "added": {}, "removed": {}}, "stats": {"added": 1, "removed": 1}, "diff": ""}


class ScriptEditService(FakeEditService):
    """Answers the script routes the agent's script tools call; a run writes the staged product into model.ifc."""

    def payload(self, method: str, path: str) -> bytes:
        return json.dumps(self.answer(method, path)).encode()

    def answer(self, method: str, path: str) -> dict:
        model_id = path.split("/")[2]
        if path.endswith("/script/staging/diff"):
            return PARAMS_DIFF
        if path.endswith("/script") and method == "PUT":
            return {"staging": {"cursor": 1, "steps": 1}}
        if path.endswith("/script/run"):
            write_boxes_ifc(model_dir(model_id) / "model.ifc", boxes_of(ducts(DUCT_D1_LOWERED)))  # what the script builds now
            return {"elements": 2, "seconds": 0.2, "semanticDiff": {"added": 0, "removed": 0, "changed": 1}}
        if path.endswith("/script/save"):
            return {"version": "v2", "diff": {"added": [], "removed": [], "changed": [{"guid": D1, "changes": []}]}}
        return {}

    def paths(self) -> list[str]:
        return [path.split("?")[0].split("/", 3)[-1] for _, path, _ in self.received]

@pytest.fixture
def edit_service(viewer_config):
    yield from serving(viewer_config, ScriptEditService())


@pytest.fixture
def clash_worker():
    """Runs the queued runs on the current versions, as the clash worker process does (staged ones are the tool's)."""
    stop = threading.Event()

    def work():
        try:
            while not stop.is_set():
                for run_id in ClashRun.objects.filter(status=ClashRun.Status.QUEUED, staged=False).values_list("id", flat=True):
                    clash_run_now(run_id)
                time.sleep(0.05)
        finally:
            connection.close()

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    yield
    stop.set()
    worker.join(10)


@pytest.fixture
def session(fake, viewer_config, edit_service, clash_worker):
    fake.replies.clear()
    fake.requests.clear()
    viewer_config(llmAPIKey="test-key", llmBaseURL=fake.url, llmModel="fake-model")
    fed = federated_project()
    return {**fed, "session": services.session_open(project_id=fed["project"].id)}


def tool_results(fake) -> dict[str, str]:
    """What the model was told each tool call gave, from the last request it got."""
    return {m["tool_call_id"]: m["content"] for m in fake.requests[-1]["body"]["messages"] if m["role"] == "tool"}


def clash_of(run: ClashRun, a: str, b: str) -> str:
    return next(s.clash_id for s in ClashSighting.objects.filter(run=run).select_related("clash") if {s.clash.a["guid"], s.clash.b["guid"]} == {a, b})


def test_the_agent_runs_the_test_fixes_the_script_rechecks_the_staged_product_and_asks_before_saving(session, fake, edit_service):
    services_id = session["services"].id
    fake.script(
        Reply().tool("list_clash_tests", {}, call_id="call_tests"),
        Reply().tool("run_clash_test", {"name": "ducts-beams"}, call_id="call_run"),
        Reply().tool("set_params", {"modelId": services_id, "params": {"duct_d1_z": 1.0}, "note": "lower duct D1 under the beams"}, call_id="call_params"),
        Reply().tool("run_script", {"modelId": services_id}, call_id="call_script"),
        Reply().tool("run_clash_test", {"name": "ducts-beams", "staged": True}, call_id="call_recheck"),
        Reply().text("Lowering duct D1 resolves its two clashes with beams B1 and B2; no new clash. One clash (D2 with B1) remains. ")
        .tool("save_version", {"modelId": services_id, "note": "duct D1 lowered under the beams"}, call_id="call_save"),
        Reply().text("Saved as v2."),
    )
    services.message_post(session_id=session["session"].id, text="resolve the clashes between the ducts and the beams")

    results = tool_results(fake)
    assert "ducts-beams" in results["call_tests"] and '"type": "hard"' in results["call_tests"]

    current = ClashRun.objects.get(staged=False)
    assert (current.trigger, current.status, current.summary["total"]) == ("agent", "done", 3)
    assert f"Run {current.id}" in results["call_run"] and "3 clash(es) present" in results["call_run"]
    assert f"model Services.ifc ({services_id})" in results["call_run"]
    assert all(clash_of(current, *pair) in results["call_run"] for pair in ((D1, B1), (D1, B2), (D2, B1)))

    assert "PARAMS staged" in results["call_params"] and "Sandbox run succeeded" in results["call_script"]
    staged = ClashRun.objects.get(staged=True)
    assert (staged.trigger, staged.status) == ("agent", "done")
    assert (staged.summary["resolved"], staged.summary["new"], staged.summary["total"]) == (2, 0, 1)
    recheck = results["call_recheck"]
    assert f"Run {staged.id}" in recheck and "staged products" in recheck
    resolved_part = recheck.split("Resolved or element missing (2):")[1].split("Still there")[0]
    assert clash_of(current, D1, B1) in resolved_part and clash_of(current, D1, B2) in resolved_part
    assert "New (" not in recheck and clash_of(current, D2, B1) in recheck.split("Still there (1):")[1]
    assert ClashRun.objects.get(pk=current.pk).test.clashes.filter(status="resolved").count() == 0  # the staged run changed no status

    # it asks before it saves, and nothing is saved meanwhile
    question = PendingQuestion.objects.get()
    assert (question.kind, question.guarded_model_id) == ("permission", services_id)
    assert "script/save" not in edit_service.paths()
    assert Turn.objects.get().outcome != "completed"

    services.question_answer(session_id=session["session"].id, interrupt_id=question.pk, answer="once")
    assert edit_service.paths().count("script/save") == 1
    assert json.loads(tool_results(fake)["call_save"])["version"] == "v2"
    assert Turn.objects.get().outcome == "completed"


def test_the_clash_tools_need_a_project_and_a_known_test(session, fake):
    fake.script(Reply().tool("read_clashes", {"name": "no-such-test"}, call_id="call_read"), Reply().text("There is no such test."))
    services.message_post(session_id=session["session"].id, text="what clashes are there?")
    assert "no clash test 'no-such-test'" in tool_results(fake)["call_read"]

    fake.script(Reply().tool("read_clashes", {"name": "ducts-beams"}, call_id="call_none"), Reply().text("Not run yet."))
    services.message_post(session_id=session["session"].id, text="and in ducts-beams?")
    assert "has no done run yet" in tool_results(fake)["call_none"]

    run = run_test(session["test"])
    fake.script(Reply().tool("read_clashes", {"name": "ducts-beams", "status": "new"}, call_id="call_new"), Reply().text("Three."))
    services.message_post(session_id=session["session"].id, text="and now?")
    answer = tool_results(fake)["call_new"]
    assert answer.startswith(f"Run {run.id} of ducts-beams: 3 clash(es)") and answer.count("[new]") == 3


@dataclasses.dataclass
class TurnContext:
    """What a tool sees of a turn (chat_app.agent.tools.ToolContext)."""

    project_id: str
    session_id: str = "s"
    turn_id: str | None = None
    model_id: str | None = None
    subagent_id: str = ""
    signature: Signature = Signature("agent")


@pytest.mark.parametrize("staged", [False, True])
def test_an_aborted_turn_cancels_the_run_it_waits_for(staged):
    """The turn was aborted (its cancel guard cancelled): run_clash_test stops waiting and cancels its run, queued
    (cancelled at once) or already running in the tool's thread (it stops at its next poll)."""
    fed = federated_project()
    guard = CancelGuard()
    guard.cancel()
    call = ToolCall(ctx=TurnContext(project_id=fed["project"].id), arguments={"name": "ducts-beams", "staged": staged})
    with cancellable(guard), pytest.raises(Cancelled):
        run_clash_test(call)
    run = ClashRun.objects.get()
    deadline = time.monotonic() + 30
    while run.status not in ("cancelled", "done", "failed") and time.monotonic() < deadline:
        time.sleep(0.1)
        run.refresh_from_db()
    assert (run.staged, run.status, run.cancel_requested) == (staged, "cancelled", True)
