"""Plan-file tools: the project's room programme, BIM supplement and delivered building, through plans_app's
services (the same as the REST API), with author "agent" and provenance AI."""

from __future__ import annotations

from chat_app.agent.tools import Tool, ToolError, ToolResult, in_thread, json_output, object_schema
from plans_app import services
from plans_app.models import PLAN_FILES
from viewer_gateway.envelope import ApiError
from viewer_gateway.provenance import AGENT_AUTHOR, Provenance

NAME = {"type": "string", "enum": list(PLAN_FILES)}
VERSION = {"type": "string", "pattern": "^(v[0-9]+|current)$"}


def _project_id(ctx) -> str:
    if not ctx.project_id:
        raise ToolError("this session belongs to no project, so it has no plan files")
    return ctx.project_id


async def _call(function, **kwargs):
    try:
        return await in_thread(lambda: function(**kwargs))()
    except ApiError as exc:
        detail = f"{exc.detail}"
        if isinstance(exc.data, dict) and exc.data.get("errors"):
            detail += "\n" + json_output(exc.data["errors"][:20])
        raise ToolError(detail) from None


async def _read_plan(ctx, arguments: dict) -> ToolResult:
    document, version = await _call(services.plan_file_get, project_id=_project_id(ctx), name=arguments["name"])
    return ToolResult(json_output({"version": version, "content": document}), title=f"read {arguments['name']} ({version or 'empty'})",
                      metadata={"name": arguments["name"], "version": version})


async def _write_plan(ctx, arguments: dict) -> ToolResult:
    result = await _call(services.plan_file_put, project_id=_project_id(ctx), name=arguments["name"], document=arguments["content"],
                         author=AGENT_AUTHOR, provenance=Provenance.AI.value)
    return ToolResult(json_output(result), title=f"wrote {arguments['name']} {result['version']}", metadata=result)


async def _plan_history(ctx, arguments: dict) -> ToolResult:
    history = await _call(services.plan_history, project_id=_project_id(ctx))
    return ToolResult(json_output(history), title=f"{len(history['versions'])} plan version(s)", metadata={"current": history["current"]})


async def _plan_diff(ctx, arguments: dict) -> ToolResult:
    diff = await _call(services.plan_diff, project_id=_project_id(ctx), base=arguments["base"], target=arguments["target"])
    return ToolResult(json_output(diff), title=f"plan diff {arguments['base']}..{arguments['target']}", metadata={"stats": diff["stats"]})


async def _deliver(ctx, arguments: dict) -> ToolResult:
    # the delivery itself tells the session's viewer (viewer.committed)
    result = await _call(services.deliver, project_id=_project_id(ctx), plan=arguments["plan"], bim_supplement=arguments["bimSupplement"],
                         author=AGENT_AUTHOR, provenance=Provenance.AI.value)
    return ToolResult(json_output(result), title=f"delivered as plan {result['version']}", metadata={"version": result["version"], "model": result["model"]})


PLAN_TOOLS = [
    Tool("read_plan", "Read a plan file: plan (room programme), bim_supplement or building (the delivered result).", object_schema({"name": NAME}, ("name",)), _read_plan),
    Tool("write_plan", "Replace a plan file with a whole new document (schema plan/1, bim_supplement/1 or building/1).",
         object_schema({"name": NAME, "content": {"type": "object"}}, ("name", "content")), _write_plan),
    Tool("plan_history", "The versions of the project's plan files.", object_schema(), _plan_history),
    Tool("plan_diff", "Field-by-field diff of two plan versions (v<n> or current).", object_schema({"base": VERSION, "target": VERSION}, ("base", "target")), _plan_diff),
    Tool("deliver", "Build the project's model from the plan and the BIM supplement and record the building. Ask the user first.",
         object_schema({"plan": {"type": "object"}, "bimSupplement": {"type": "object"}}, ("plan", "bimSupplement")), _deliver),
]
