"""Sub-agents: the main agent hands a larger piece of work to a persona with a subset of the tools (never
delegate, never ask_user). The sub-agent's messages and frames carry its subagentId; it is aborted with its parent."""

from __future__ import annotations

import asyncio
import secrets

from chat_app import events
from chat_app.agent.loop import TurnContext, close_aborted, run_turn
from chat_app.agent.tools import MODEL_ID, Tool, ToolError, ToolResult, in_thread, object_schema
from chat_app.agent.writer import now_ms
from chat_app.models import Message, Part, sortable_id


def _tools(*groups: list[Tool], names: set[str] | None = None) -> dict[str, Tool]:
    return {tool.name: tool for group in groups for tool in group if names is None or tool.name in names}


def personas() -> dict[str, dict]:
    from chat_app.agent.element_tools import ELEMENT_TOOLS
    from chat_app.agent.review_tools import REVIEW_TOOLS
    from chat_app.agent.script_tools import SCRIPT_TOOLS

    return {
        "modeler": {
            "prompt": "You are the modeler. You change the build script to do the task: read it or its PARAMS, stage a change, run it, check the element-level diff. Never save a version; say exactly what you staged and what the run changed.",
            "tools": _tools(SCRIPT_TOOLS, ELEMENT_TOOLS, names={"get_script", "put_script", "get_params", "set_params", "undo", "redo", "run_script", "staging_diff", "model_diff", "locate", "edit_call", "list_versions", "find_elements", "get_element"}),
        },
        "reviewer": {
            "prompt": "You are the reviewer. You inspect elements and keep review records: pin issues to elements, set property overrides, list what is open. Report what you recorded.",
            "tools": _tools(ELEMENT_TOOLS, REVIEW_TOOLS),
        },
        "analyst": {
            "prompt": "You are the analyst. You compare versions and explain the differences element by element. You change nothing.",
            "tools": _tools(SCRIPT_TOOLS, ELEMENT_TOOLS, names={"list_versions", "model_diff", "script_diff", "get_params", "find_elements", "get_element"}),
        },
    }


def _store_task(session_id: str, subagent_id: str, task: str) -> str:
    message_id, part_id, created = sortable_id("msg_"), sortable_id("prt_"), now_ms()
    info = {"id": message_id, "sessionID": session_id, "role": "user", "time": {"created": created}, "agent": "main", "subagentId": subagent_id}
    message = Message.objects.create(id=message_id, session_id=session_id, role=Message.Role.USER, subagent_id=subagent_id, info=info)
    Part.objects.create(id=part_id, message=message, type="text", data={
        "id": part_id, "sessionID": session_id, "messageID": message_id, "type": "text", "text": task, "time": {"start": created, "end": created}, "subagentId": subagent_id,
    })
    return message_id


def _final_text(session_id: str, subagent_id: str) -> str:
    message = Message.objects.filter(session_id=session_id, subagent_id=subagent_id, role=Message.Role.ASSISTANT).order_by("-id").first()
    return "".join(p.data.get("text", "") for p in message.parts.filter(type="text")) if message else ""


async def _delegate(ctx: TurnContext, arguments: dict) -> ToolResult:
    persona_name = arguments["persona"]
    persona = personas()[persona_name]
    subagent_id = "sa_" + secrets.token_hex(6)
    status = {
        "sessionID": ctx.session_id, "subagentId": subagent_id, "persona": persona_name, "task": arguments["task"],
        "parent": {"messageID": ctx.writer.id if ctx.writer else "", "callID": ctx.current_call}, "time": {"start": now_ms()},
    }
    await events.apublish(ctx.session_id, "subagent.status", {**status, "status": "running"})
    task_message = await in_thread(_store_task)(ctx.session_id, subagent_id, arguments["task"])
    sub = TurnContext(
        session_id=ctx.session_id, user_message_id=task_message, llm=ctx.llm, tools=persona["tools"],
        model_id=arguments.get("modelId") or ctx.model_id, project_id=ctx.project_id, project_kind=ctx.project_kind,
        subagent_id=subagent_id, persona=persona_name, system_prompt=persona["prompt"] + "\n\n" + ctx.context_note,
    )
    ended = {**status, "time": {**status["time"], "end": None}}
    try:
        await run_turn(sub)
    except asyncio.CancelledError:
        await asyncio.shield(close_aborted(sub))
        ended["time"]["end"] = now_ms()
        await asyncio.shield(events.apublish(ctx.session_id, "subagent.status", {**ended, "status": "aborted"}))
        raise
    except Exception as exc:  # noqa: BLE001 - the parent reads the failure as the tool's error
        ended["time"]["end"] = now_ms()
        await events.apublish(ctx.session_id, "subagent.status", {**ended, "status": "error", "error": str(exc)[:500]})
        raise ToolError(f"the {persona_name} sub-agent failed: {exc}") from None
    result = await in_thread(_final_text)(ctx.session_id, subagent_id)
    ended["time"]["end"] = now_ms()
    await events.apublish(ctx.session_id, "subagent.status", {**ended, "status": "completed", "result": result[:2000]})
    return ToolResult(f"subagent_id: {subagent_id}\n<task_result>\n{result}\n</task_result>", title=f"{persona_name} finished",
                      metadata={"subagentId": subagent_id, "persona": persona_name})


DELEGATE = Tool(
    name="delegate",
    description="Hand a self-contained piece of work to a sub-agent persona: modeler (changes and runs the build script, never saves), reviewer (issues and overrides), analyst (compares versions, read-only). Returns its final report.",
    parameters=object_schema({"persona": {"type": "string", "enum": ["modeler", "reviewer", "analyst"]}, "task": {"type": "string", "minLength": 1}, **MODEL_ID}, ("persona", "task")),
    run=_delegate,
)
