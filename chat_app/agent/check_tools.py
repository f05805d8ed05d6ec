"""Automated-review tools: the project's IDS files, a check of a model version against them (started and waited
for), an account of what fails and why, and pinning the failures as review issues (provenance AI). With the script
tools this closes the loop: check, edit PARAMS or call sites, run, check again."""

from __future__ import annotations

import time

from chat_app.agent.tools import ToolCall, ToolError, ToolResult, agent_tool, call_service, json_output
from checks_app import selectors, services
from checks_app.models import Check
from core import cancellation
from accounts_app.roles import Capability
from core.provenance import Provenance

CHECK_ID = {"type": "string", "pattern": "^chk_[0-9a-f]{16}$"}
POLL_SECONDS = 0.5
# how long run_ids_check waits for the check worker beyond the check's own time limit (queueing, fetching a version)
WAIT_MARGIN_SECONDS = 120


def _project_id(call: ToolCall) -> str:
    if not call.project_id:
        raise ToolError("this session has no project, so it has no IDS files; ask the user to create a project")
    return call.project_id


@agent_tool("list_ids_files", "The project's IDS files (buildingSMART Information Delivery Specifications): name, title, number of specifications.")
def list_ids_files(call: ToolCall) -> ToolResult:
    files = call_service(lambda: [
        {"name": f.name, "title": f.document.title, "specifications": f.document.specifications} for f in selectors.ids_file_list(_project_id(call))
    ])
    return ToolResult(json_output(files), title=f"{len(files)} IDS file(s)", metadata={"projectId": call.project_id, "files": files})


def _wait_until_finished(model_id: str, check_id: str) -> dict:
    deadline = time.monotonic() + services.check_time_limit_seconds() + WAIT_MARGIN_SECONDS
    while True:
        state = call_service(services.failures_explain, model_id=model_id, check_id=check_id)
        if state["status"] in (Check.Status.DONE, Check.Status.FAILED):
            return state
        if time.monotonic() > deadline:
            raise ToolError(f"check {check_id} is still {state['status']} ({state['progress']['phase']}); ask later with explain_failures")
        cancellation.check()  # an aborted turn stops waiting (the check itself finishes and stays cached)
        time.sleep(POLL_SECONDS)


@agent_tool("run_ids_check", "Check the model (the current product, or a saved version v<n>) against IDS files of the project and wait "
            "for the result: which specifications pass, which fail and why. A repeated check of the same product is answered from the cache.", {
    "ids": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "names of the project's IDS files"},
    "version": {"type": "string", "pattern": "^(current|v[1-9][0-9]*)$", "description": "current (default) or v<n>"},
    "includeOverrides": {"type": "boolean", "description": "apply the model's property overrides before checking"},
}, ("ids",), takes_model=True, capability=Capability.REVIEW)
def run_ids_check(call: ToolCall) -> ToolResult:
    check, reused = call_service(services.check_start, model_id=call.model_id, ids_names=call.arguments["ids"],
                                 version=call.arguments.get("version", "current"), include_overrides=call.arguments.get("includeOverrides", False))
    state = _wait_until_finished(call.model_id, check.id)
    if state["status"] == Check.Status.FAILED:
        raise ToolError(state["text"])
    summary = state["summary"]
    return ToolResult(
        state["text"] + ("\n(answered from the cache)" if reused else ""),
        title=f"IDS check {check.id}: {summary['passed']}/{summary['specifications']} specifications pass",
        metadata={"modelId": call.model_id, "checkId": check.id, "summary": summary, "cached": reused},
    )


@agent_tool("explain_failures", "What fails in a finished IDS check and why: per failing specification its requirements, instructions "
            "and examples with the value found and the value expected.", {
    "checkId": CHECK_ID, "examples": {"type": "integer", "minimum": 1, "maximum": 50, "description": "examples per specification (default 5)"},
}, ("checkId",), takes_model=True)
def explain_failures(call: ToolCall) -> ToolResult:
    state = call_service(services.failures_explain, model_id=call.model_id, check_id=call.arguments["checkId"],
                         examples_per_specification=call.arguments.get("examples", 5))
    return ToolResult(json_output({"text": state["text"], "failing": state.get("failing", []), "summary": state.get("summary")}),
                      title=f"failures of {call.arguments['checkId']}", metadata={"modelId": call.model_id, "checkId": call.arguments["checkId"]})


@agent_tool("pin_ids_failures", "Pin the failures of a finished IDS check as review issues (provenance AI); failures already pinned are "
            "not duplicated, fixed ones are resolved.", {"checkId": CHECK_ID}, ("checkId",), takes_model=True, capability=Capability.REVIEW)
def pin_ids_failures(call: ToolCall) -> ToolResult:
    pinned = call_service(services.check_pin_issues, model_id=call.model_id, check_id=call.arguments["checkId"],
                          provenance=Provenance.AI.value, signature=call.signature)
    counts = {key: len(value) for key, value in pinned.items()}
    return ToolResult(json_output(pinned), title=", ".join(f"{n} {key}" for key, n in counts.items()), metadata={"modelId": call.model_id, **counts})
