"""Clash tools: the project's clash tests, a run of one (on the models' current versions, or on their staged working
products) waited for, and a run's clashes. With the script tools this closes the coordination loop: run the test,
change PARAMS or call sites, run the staged product against the test, see which clashes are resolved and which are
new, and save only when the user allows it (save_version asks).

A run on the current versions is queued for the clash workers (as the REST route queues it) and waited for. A run on
the staged product is run here, in a thread of this process, at once (coordination_app.services.runs.clash_run_now:
each model's working product meshed, then the clash engine, both in the run's confined child: bubblewrap, memory cap;
this process does no geometry), so the agent's turn does not wait for a worker; it is compared with the last done run
like any run, but changes no clash's status. An aborted turn cancels the run."""

from __future__ import annotations

import threading
import time

from django.db import close_old_connections, connection

from accounts_app.roles import Capability
from chat_app.agent.tools import ToolCall, ToolError, ToolResult, agent_tool, call_service, json_output
from coordination_app import selectors
from coordination_app.models import PRESENT, ClashRun
from coordination_app.services.pinning import ClashFacts, done_run
from coordination_app.services.runs import clash_run_now, run_cancel, run_request
from core import cancellation
from models_app.models import IfcModel

TEST_NAME = {"type": "string", "minLength": 1, "maxLength": 64, "description": "the clash test's name"}
RUN_ID = {"type": "string", "pattern": "^r_[0-9a-f]{16}$"}
POLL_SECONDS = 0.5
WAIT_SECONDS = 30 * 60  # how long run_clash_test waits for a queued run (workers busy, two big models)
CLASHES_SHOWN = 40  # clashes of each kind named in an answer (the counts are complete)
CLASHES_READ = 200  # clashes read_clashes names (the count is complete)
ENDED = (ClashRun.Status.DONE, ClashRun.Status.FAILED, ClashRun.Status.CANCELLED)


def _project_id(call: ToolCall) -> str:
    if not call.project_id:
        raise ToolError("this session has no project, so it has no clash tests; ask the user to create a project")
    return call.project_id


def _test_summary(test) -> dict:
    last = test.runs.filter(status=ClashRun.Status.DONE, staged=False).order_by("-created_at").first()
    return {
        "name": test.name, "type": test.kind, "a": test.a, "b": test.b, "tolerance": test.tolerance, "distance": test.distance,
        "automatic": test.automatic, "lastRun": {"runId": last.id, "summary": selectors.run_summary(last)} if last else None,
    }


@agent_tool("list_clash_tests", "The project's clash tests: name, type (hard, clearance, duplicate), sets A and B (models, IFC "
            "classes, exclusions), tolerance or distance, and the summary of each test's last run.")
def list_clash_tests(call: ToolCall) -> ToolResult:
    tests = call_service(lambda: [_test_summary(test) for test in selectors.clash_test_list(_project_id(call))])
    return ToolResult(json_output(tests), title=f"{len(tests)} clash test(s)", metadata={"projectId": call.project_id, "tests": [t["name"] for t in tests]})


def _model_names(sightings: list) -> dict[str, str]:
    """Model id -> "name (id)" for the models of the clashes, in one query."""
    ids = {side["modelId"] for s in sightings for side in (s.clash.a, s.clash.b)}
    return {model_id: f"{name} ({model_id})" for model_id, name in IfcModel.objects.filter(pk__in=ids).values_list("id", "name")}


def _element_words(side: dict, models: dict[str, str]) -> str:
    model = models.get(side.get("modelId"), side.get("modelId"))
    return f"{side.get('type') or '?'} \"{side.get('name') or side.get('guid')}\" ({side.get('guid')}, model {model})"


def _clash_line(sighting, models: dict[str, str]) -> str:
    clash, facts = sighting.clash, ClashFacts.of(sighting)
    review = f", {clash.review_status}" if clash.review_status else ""
    point = ", ".join(f"{v:.2f}" for v in facts.point)
    return f"{clash.id} [{sighting.status}{review}] {_element_words(clash.a, models)} x {_element_words(clash.b, models)}, {facts.measure()} at ({point})"


def _listed(title: str, sightings: list, models: dict[str, str]) -> list[str]:
    if not sightings:
        return []
    lines = [f"{title} ({len(sightings)}):", *(f"- {_clash_line(s, models)}" for s in sightings[:CLASHES_SHOWN])]
    if len(sightings) > CLASHES_SHOWN:
        lines.append(f"- ... and {len(sightings) - CLASHES_SHOWN} more (read_clashes lists them)")
    return lines


def run_report(run: ClashRun) -> tuple[str, dict]:
    """The run in words for the model (its summary, the clashes it found new, those it resolved or found missing,
    how many stay) and its numbers for the client."""
    summary = selectors.run_summary(run)
    sightings = list(selectors.run_sightings(run))
    models = _model_names(sightings)
    new = [s for s in sightings if s.status == "new"]
    gone = [s for s in sightings if s.status not in PRESENT]
    staying = [s for s in sightings if s.status == "active"]
    against = "the staged products (nothing recorded as the clashes' status)" if run.staged else "the models' current versions"
    lines = [
        f"Run {run.id} of clash test {run.test.name} on {against}: {summary['total']} clash(es) present; "
        f"new {summary['new']}, still there {summary['active']}, resolved {summary['resolved']}, element missing {summary['missing']}, "
        f"approved {summary['approved']} (compared with the last done run of the current versions).",
        *_listed("New", new, models), *_listed("Resolved or element missing", gone, models), *_listed("Still there", staying, models),
    ]
    return "\n".join(lines), {"runId": run.id, "test": run.test.name, "staged": run.staged, "summary": summary,
                              "new": [s.clash_id for s in new], "resolved": [s.clash_id for s in gone]}


def _run_here(run_id: str) -> None:
    """A staged run in a thread of its own (its own database connection, closed at the end)."""
    try:
        close_old_connections()
        clash_run_now(run_id)
    finally:
        connection.close()


def _wait(run: ClashRun, deadline: float) -> ClashRun:
    try:
        while True:
            run.refresh_from_db()
            if run.status in ENDED:
                return run
            if time.monotonic() > deadline:
                raise ToolError(f"run {run.id} is still {run.status} ({run.progress_phase}); read it later with read_clashes")
            cancellation.check()  # an aborted turn stops waiting, and stops the run
            time.sleep(POLL_SECONDS)
    except cancellation.Cancelled:
        run_cancel(run)
        raise


@agent_tool("run_clash_test", "Run a clash test of the project and wait for it: on the models' current versions (default), or with "
            "staged: true on the staged working products (after run_script or edit_call, before saving; this changes no clash's status). "
            "Answers the clashes new since the last done run of the current versions, those resolved (or whose element is missing) and "
            "those still there.", {
                "name": TEST_NAME,
                "staged": {"type": "boolean", "description": "run on the staged (unsaved) products instead of the current versions"},
            }, ("name",), capability=Capability.REVIEW)
def run_clash_test(call: ToolCall) -> ToolResult:
    staged = bool(call.arguments.get("staged"))
    test = call_service(selectors.clash_test_get, _project_id(call), call.arguments["name"])
    run = call_service(run_request, test, trigger=ClashRun.Trigger.AGENT, by=call.signature.author, staged=staged)
    if staged:
        threading.Thread(target=_run_here, args=(run.id,), name=f"clash-run-{run.id}", daemon=True).start()
    run = call_service(done_run, _wait(run, time.monotonic() + WAIT_SECONDS))
    text, numbers = run_report(run)
    summary = numbers["summary"]
    return ToolResult(text, title=f"clash run {run.id}{' (staged)' if staged else ''}: {summary['total']} present, {summary['new']} new, "
                                  f"{summary['resolved'] + summary['missing']} resolved", metadata={"projectId": call.project_id, **numbers})


@agent_tool("read_clashes", "The clashes of a run of a clash test (default: its last done run of the current versions), optionally of "
            "one status: new, active, resolved, missing, approved (present and approved), open (present, not approved).", {
                "name": TEST_NAME, "runId": RUN_ID,
                "status": {"type": "string", "enum": ["new", "active", "resolved", "missing", "approved", "open"]},
            }, ("name",))
def read_clashes(call: ToolCall) -> ToolResult:
    project_id, name = _project_id(call), call.arguments["name"]
    if call.arguments.get("runId"):
        run = call_service(selectors.clash_run_get, project_id, name, call.arguments["runId"])
    else:
        run = call_service(lambda: selectors.clash_run_list(project_id, name).filter(status=ClashRun.Status.DONE, staged=False).first())
        if run is None:
            raise ToolError(f"clash test {name} has no done run yet: run it with run_clash_test")
    call_service(done_run, run)
    sightings = list(call_service(selectors.run_sightings, run, call.arguments.get("status")))
    named = sightings[:CLASHES_READ]
    models = _model_names(named)
    lines = [f"Run {run.id} of {name}{' (staged)' if run.staged else ''}: {len(sightings)} clash(es)", *(_clash_line(s, models) for s in named)]
    if len(sightings) > CLASHES_READ:
        lines.append(f"... and {len(sightings) - CLASHES_READ} more: ask for one status at a time")
    return ToolResult("\n".join(lines), title=f"{len(sightings)} clash(es) of {run.id}",
                      metadata={"projectId": project_id, "runId": run.id, "count": len(sightings), "summary": selectors.run_summary(run)})

