"""Sub-agents: the main agent hands a larger piece of work to a persona with a subset of the tools (never
delegate, never ask_user). The sub-agent's messages and frames carry its subagentId; it is aborted with its parent.
When one of its calls needs the user's permission, the delegation waits with it (the delegate call stays running)
and goes on where it stood once the user answered."""

from __future__ import annotations

import asyncio
import secrets

from chat_app import events, frames
from chat_app.agent.loop import CallEnd, Outcome, TurnContext, close_aborted, continue_step, resume_turn, run_turn
from chat_app.agent.prompts import prompt
from chat_app.agent.tools import Suspended, ToolCall, ToolError, ToolResult, agent_tool
from chat_app.agent.writer import writer_for
from chat_app.models import Message, Part, PendingQuestion, sortable_id
from chat_app.parts import now_ms, text_part, tool_completed, tool_error
from chat_app.threads import in_thread

MODELER_TOOLS = ("get_script", "put_script", "get_params", "set_params", "undo", "redo", "run_script", "staging_diff", "model_diff", "locate",
                 "edit_call", "list_versions", "find_elements", "get_element")
REVIEWER_TOOLS = ("find_elements", "get_element", "list_issues", "create_issue", "update_issue", "list_comments", "add_comment", "edit_comment",
                  "get_overrides", "set_overrides", "list_changes", "migrate_overrides", "list_ids_files", "run_ids_check", "explain_failures",
                  "pin_ids_failures", "list_clash_tests", "run_clash_test", "read_clashes")
ANALYST_TOOLS = ("list_versions", "model_diff", "script_diff", "get_params", "find_elements", "get_element", "list_clash_tests", "read_clashes")


PERSONA_TOOLS = {"modeler": MODELER_TOOLS, "reviewer": REVIEWER_TOOLS, "analyst": ANALYST_TOOLS}


def _store_task(session_id: str, turn_id: str | None, subagent_id: str, task: str) -> str:
    message_id, created = sortable_id("msg_"), now_ms()
    info = {"id": message_id, "sessionID": session_id, "role": "user", "time": {"created": created}, "agent": "main", "subagentId": subagent_id}
    message = Message.objects.create(id=message_id, session_id=session_id, turn_id=turn_id, role=Message.Role.USER, subagent_id=subagent_id, info=info)
    part = text_part(session_id, message_id, task, created, subagentId=subagent_id)
    Part.objects.create(id=part["id"], message=message, type="text", data=part)
    return message_id


def _final_text(session_id: str, subagent_id: str) -> str:
    message = Message.objects.filter(session_id=session_id, subagent_id=subagent_id, role=Message.Role.ASSISTANT).order_by("-id").first()
    return "".join(p.data.get("text", "") for p in message.parts.filter(type="text")) if message else ""


def _status(ctx: TurnContext, subagent_id: str, arguments: dict, started: int, message_id: str, call_id: str) -> dict:
    return frames.subagent(ctx.session_id, subagent_id, arguments["persona"], arguments["task"], message_id=message_id, call_id=call_id, start=started)


def _sub_context(ctx: TurnContext, subagent_id: str, arguments: dict, task_message_id: str, model_id: str | None) -> TurnContext:
    persona = arguments["persona"]
    tools = {name: ctx.tools[name] for name in PERSONA_TOOLS[persona]}  # the main agent has every tool
    return TurnContext(
        session_id=ctx.session_id, turn_id=ctx.turn_id, user_message_id=task_message_id, llm=ctx.llm, tools=tools,
        model_id=model_id or ctx.model_id, project_id=ctx.project_id, project_kind=ctx.project_kind,
        subagent_id=subagent_id, persona=persona, system_prompt=prompt(f"persona-{persona}") + "\n\n" + ctx.context_note,
        acting_user=ctx.acting_user, signature=ctx.signature,
    )


async def _run_delegation(ctx: TurnContext, status: dict, run) -> ToolResult:
    """Runs (or goes on with) the sub-agent and reports its end: the final text, or the failure as the tool's error."""
    sub_name, subagent_id = status["persona"], status["subagentId"]
    ended = {**status, "time": {**status["time"], "end": None}}
    try:
        outcome = await run()
    except asyncio.CancelledError:
        ended["time"]["end"] = now_ms()
        await asyncio.shield(events.apublish(ctx.session_id, *frames.subagent_status(ended, "aborted")))
        raise
    except Exception as exc:  # noqa: BLE001 - the parent reads the failure as the tool's error
        ended["time"]["end"] = now_ms()
        await events.apublish(ctx.session_id, *frames.subagent_status(ended, "error", error=str(exc)[:500]))
        raise ToolError(f"the {sub_name} sub-agent failed: {exc}") from None
    if outcome is Outcome.SUSPENDED:
        raise Suspended()
    result = await in_thread(_final_text)(ctx.session_id, subagent_id)
    ended["time"]["end"] = now_ms()
    await events.apublish(ctx.session_id, *frames.subagent_status(ended, "completed", result=result[:2000]))
    return ToolResult(f"subagent_id: {subagent_id}\n<task_result>\n{result}\n</task_result>", title=f"{sub_name} finished",
                      metadata={"subagentId": subagent_id, "persona": sub_name})


async def _delegate(call: ToolCall) -> ToolResult:
    ctx: TurnContext = call.ctx  # a native tool runs on the loop, with the loop's own context (its writer and open parts)
    arguments = call.arguments
    subagent_id = "sa_" + secrets.token_hex(6)
    writer = ctx.writer
    part = next(p for p in ctx.open_parts.values() if p["callID"] == ctx.current_call)
    status = _status(ctx, subagent_id, arguments, now_ms(), writer.id if writer else "", ctx.current_call)
    # the running call names its sub-agent, so the delegation can go on after a question of the sub-agent
    part["state"]["metadata"] = {"subagentId": subagent_id, "persona": arguments["persona"], "started": status["time"]["start"], "modelId": call.model_id}
    await writer.publish_part(part)
    await events.apublish(ctx.session_id, *frames.subagent_status(status, "running"))
    task_message = await in_thread(_store_task)(ctx.session_id, ctx.turn_id, subagent_id, arguments["task"])
    sub = _sub_context(ctx, subagent_id, arguments, task_message, call.model_id)

    async def run():
        try:
            return await run_turn(sub)
        except asyncio.CancelledError:
            await asyncio.shield(close_aborted(sub))
            raise

    return await _run_delegation(ctx, status, run)


def _delegation_call(turn_id: str, subagent_id: str) -> tuple[Message, dict]:
    for row in Part.objects.filter(message__turn_id=turn_id, type="tool", data__tool="delegate").order_by("-id"):
        if (row.data["state"].get("metadata") or {}).get("subagentId") == subagent_id:
            return row.message, row.data
    raise LookupError(f"no delegate call of sub-agent {subagent_id} in turn {turn_id}")


def _task_message(session_id: str, subagent_id: str) -> str:
    return Message.objects.filter(session_id=session_id, subagent_id=subagent_id, role=Message.Role.USER).order_by("id").values_list("id", flat=True).first() or ""


async def resume_delegation(ctx: TurnContext, question: PendingQuestion) -> Outcome:
    """The main turn waited for a sub-agent's question: the sub-agent goes on with the answer; when it finishes,
    its delegate call completes and the main turn goes on after it."""
    message, part = await in_thread(_delegation_call)(ctx.turn_id, question.subagent_id)
    writer = writer_for(message)
    ctx.writer, ctx.current_call = writer, part["callID"]
    ctx.open_parts[part["id"]] = part
    arguments = part["state"]["input"]
    sub = _sub_context(ctx, question.subagent_id, arguments, await in_thread(_task_message)(ctx.session_id, question.subagent_id),
                       (part["state"].get("metadata") or {}).get("modelId"))
    status = _status(ctx, question.subagent_id, arguments, part["state"]["metadata"].get("started", now_ms()), message.id, part["callID"])

    async def run():
        try:
            return await resume_turn(sub, question)
        except asyncio.CancelledError:
            await asyncio.shield(close_aborted(sub))
            raise

    try:
        result = await _run_delegation(ctx, status, run)
    except Suspended:
        return Outcome.SUSPENDED
    except ToolError as exc:
        part["state"] = tool_error(part["state"], str(exc))
        ctx.open_parts.pop(part["id"], None)
        await writer.publish_part(part)
        return await continue_step(ctx, writer, part["id"], CallEnd.DONE)
    part["state"] = tool_completed(part["state"], arguments, result.output, title=result.title, metadata=result.metadata)
    ctx.open_parts.pop(part["id"], None)
    await writer.publish_part(part)
    return await continue_step(ctx, writer, part["id"], CallEnd.DONE)


agent_tool(
    "delegate",
    "Hand a self-contained piece of work to a sub-agent persona: modeler (changes and runs the build script, never saves), reviewer (issues and overrides), analyst (compares versions, read-only). Returns its final report.",
    {"persona": {"type": "string", "enum": ["modeler", "reviewer", "analyst"]}, "task": {"type": "string", "minLength": 1}},
    ("persona", "task"), takes_model=True, native=True, on_resume=resume_delegation, capability=None,
)(_delegate)
