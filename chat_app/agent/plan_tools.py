"""Plan-file tools: the project's room programme, BIM supplement and delivered building, through plans_app's
services (the same as the REST API), signed "agent on behalf of <user>" (agent/acting.py) with provenance AI. The delivery tells the session's viewer
itself, through the project event seam."""

from __future__ import annotations

from chat_app.agent.tools import ToolCall, ToolError, ToolResult, agent_tool, call_service, json_output
from accounts_app.roles import Capability
from core.provenance import Provenance
from plans_app import services
from plans_app.models import PLAN_FILES
from plans_app.use_cases import deliver as delivery

NAME = {"type": "string", "enum": list(PLAN_FILES)}
VERSION = {"type": "string", "pattern": "^(v[0-9]+|current)$"}


def _project_id(call: ToolCall) -> str:
    if not call.project_id:
        raise ToolError("this session belongs to no project, so it has no plan files")
    return call.project_id


@agent_tool("read_plan", "Read a plan file: plan (room programme), bim_supplement or building (the delivered result).", {"name": NAME}, ("name",))
def read_plan(call: ToolCall) -> ToolResult:
    name = call.arguments["name"]
    document, version = call_service(services.plan_file_get, project_id=_project_id(call), name=name)
    return ToolResult(json_output({"version": version, "content": document}), title=f"read {name} ({version or 'empty'})", metadata={"name": name, "version": version})


@agent_tool("write_plan", "Replace a plan file with a whole new document (schema plan/1, bim_supplement/1 or building/1).",
            {"name": NAME, "content": {"type": "object"}}, ("name", "content"), capability=Capability.EDIT)
def write_plan(call: ToolCall) -> ToolResult:
    name = call.arguments["name"]
    result = call_service(services.plan_file_put, project_id=_project_id(call), name=name, document=call.arguments["content"], author=call.signature.author,
                          provenance=Provenance.AI.value)
    return ToolResult(json_output(result), title=f"wrote {name} {result['version']}", metadata=result)


@agent_tool("plan_history", "The versions of the project's plan files.")
def plan_history(call: ToolCall) -> ToolResult:
    history = call_service(services.plan_history, project_id=_project_id(call))
    return ToolResult(json_output(history), title=f"{len(history['versions'])} plan version(s)", metadata={"current": history["current"]})


@agent_tool("plan_diff", "Field-by-field diff of two plan versions (v<n> or current).", {"base": VERSION, "target": VERSION}, ("base", "target"))
def plan_diff(call: ToolCall) -> ToolResult:
    base, target = call.arguments["base"], call.arguments["target"]
    diff = call_service(services.plan_diff, project_id=_project_id(call), base=base, target=target)
    return ToolResult(json_output(diff), title=f"plan diff {base}..{target}", metadata={"stats": diff["stats"]})


@agent_tool("deliver", "Build the project's model(s) from the plan and the BIM supplement and record the building (the user is asked for permission).",
            {"plan": {"type": "object"}, "bimSupplement": {"type": "object"}}, ("plan", "bimSupplement"), irreversible=True, capability=Capability.EDIT)
def deliver(call: ToolCall) -> ToolResult:
    result = call_service(delivery.deliver, project_id=_project_id(call), plan=call.arguments["plan"], bim_supplement=call.arguments["bimSupplement"],
                          provenance=Provenance.AI.value, signature=call.signature)
    return ToolResult(json_output(result), title=f"delivered as plan {result['version']}", metadata={"version": result["version"], "model": result["model"]})
