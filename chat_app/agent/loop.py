"""One turn of the agent: model steps with streamed parts and tool calls, until the model stops, or the turn waits
for the user (a question, or a permission request for an irreversible call), or is aborted.

The calls of a step run in the order the model gave them. A call that waits for the user holds the calls after it:
they stay pending until the answer comes, then run (after a rejected permission they do not run at all, and the
model reads why). The loop keeps no state between steps but the database: every step starts from the stored
history, and a turn resumes after an answer, a reload or a restart exactly where it stood."""

from __future__ import annotations

import enum
import json
import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from chat_app import events, frames
from chat_app.agent import context
from chat_app.agent.acting import ActingUser, require_tool
from chat_app.agent.chunks import Finish, ReasoningDelta, TextDelta, ToolCallDelta, Usage
from chat_app.agent.execution import run_tool
from chat_app.agent.scope import checked_model
from chat_app.agent.tools import Suspended, Tool, ToolCall, ToolError, ToolResult
from chat_app.agent.writer import MessageWriter, writer_for
from chat_app.consent import PERMISSION_OPTIONS, parse_permission_answer
from chat_app.models import ChatSession, Message, Part, PendingQuestion
from chat_app.parts import ENDED, now_ms, streamed_part, text_part, tool_completed, tool_error, tool_part, tool_pending, tool_running
from chat_app.threads import in_thread
from api.signatures import Signature, agent_signature

logger = logging.getLogger(__name__)

MAX_STEPS = 25
ABORTED = "Tool execution aborted"
INTERRUPTED = "[Tool execution was interrupted]"
NOT_ANSWERED = "The user sent a new message instead of answering."
HELD_AFTER_REJECT = "Not run: the user rejected an earlier call of this step."
HELD_AFTER_NEW_MESSAGE = "Not run: the user sent a new message instead of answering an earlier call of this step."


class Outcome(enum.Enum):
    FINISHED = "finished"
    SUSPENDED = "suspended"


class CallEnd(enum.Enum):
    DONE = "done"
    SUSPENDED = "suspended"  # waits for the user; the calls after it are held
    REJECTED = "rejected"  # the user refused it; the calls after it are not run


@dataclass
class TurnContext:
    session_id: str
    turn_id: str | None
    user_message_id: str
    llm: Any
    tools: dict[str, Tool]
    model_id: str | None = None
    project_id: str | None = None
    project_kind: str | None = None
    subagent_id: str = ""
    persona: str = "main"
    system_prompt: str = ""
    context_note: str = ""  # the project and model, for sub-agents' prompts
    acting_user: ActingUser | None = None  # who wrote the message: every call is decided for this user (agent/acting.py)
    signature: Signature = field(default_factory=lambda: agent_signature(None))
    current_call: str = ""  # callID of the tool running now
    # what an abort must close: the assistant message being written and its unfinished tool parts
    writer: MessageWriter | None = None
    open_parts: dict[str, dict] = field(default_factory=dict)


# --- history -----------------------------------------------------------------------------------------------------


def _tool_output(part: dict) -> str:
    state = part["state"]
    if state["status"] == "completed":
        return state["output"]
    if state["status"] == "error":
        return f"Error: {state['error']}"
    return INTERRUPTED


def build_history(session_id: str, subagent_id: str = "") -> list[dict]:
    """The stored conversation in the chat-completions message format."""
    history = []
    messages = Message.objects.filter(session_id=session_id, subagent_id=subagent_id, compacted=False).order_by("id")
    for message in messages.prefetch_related("parts"):
        parts = [p.data for p in message.parts.all()]
        summary = next((p["text"] for p in parts if p["type"] == "compaction"), None)
        if summary is not None:
            history.append({"role": "user", "content": summary})
            continue
        text = "".join(p.get("text", "") for p in parts if p["type"] == "text")
        if message.role == Message.Role.USER:
            history.append({"role": "user", "content": text})
            continue
        calls = [p for p in parts if p["type"] == "tool"]
        entry = {"role": "assistant", "content": text or None}
        if calls:
            entry["tool_calls"] = [
                {"id": p["callID"], "type": "function", "function": {"name": p["tool"], "arguments": json.dumps(p["state"].get("input") or {})}}
                for p in calls
            ]
        if text or calls:
            history.append(entry)
        history += [{"role": "tool", "tool_call_id": p["callID"], "content": _tool_output(p)} for p in calls]
    return history


def assistant_info(ctx: TurnContext) -> dict:
    return {
        "role": "assistant",
        "parentID": ctx.user_message_id,
        "agent": ctx.persona,
        "providerID": ctx.llm.provider_id,
        "modelID": ctx.llm.model_id,
        "time": {"created": now_ms()},
        "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
        "cost": 0,
    }


async def _complete(writer: MessageWriter, finish: str | None, error: dict | None = None) -> None:
    writer.info["time"]["completed"] = now_ms()
    if finish:
        writer.info["finish"] = finish
    if error:
        writer.info["error"] = error
    await writer.publish_info()


async def _set_state(ctx: TurnContext, writer: MessageWriter, part: dict, state: dict) -> None:
    part["state"] = state
    if state["status"] in ENDED:
        ctx.open_parts.pop(part["id"], None)
    else:
        ctx.open_parts[part["id"]] = part
    await writer.publish_part(part)


async def _fail_call(ctx: TurnContext, writer: MessageWriter, part: dict, error: str, **extra) -> None:
    await _set_state(ctx, writer, part, tool_error(part["state"], error, **extra))


async def _finish_step(ctx: TurnContext, writer: MessageWriter, reason: str) -> None:
    await writer.publish_part(writer.new_part("step-finish", reason=reason, tokens=writer.info["tokens"], cost=writer.info.get("cost", 0)))
    await _complete(writer, reason)
    ctx.writer = None


# --- questions and permission requests ---------------------------------------------------------------------------


async def _ask(ctx: TurnContext, writer: MessageWriter, part: dict, kind: str, fields: dict, guarded: ToolCall | None = None) -> None:
    """Asks the user; for a permission request `guarded` is the call waiting for it (who may answer: its capability)."""
    def store() -> dict:
        question = PendingQuestion(session_id=ctx.session_id, turn_id=ctx.turn_id, kind=kind, subagent_id=ctx.subagent_id,
                                   message_id=writer.id, call_id=part["callID"])
        if guarded is not None:
            tool = ctx.tools[part["tool"]]
            question.guarded_capability, question.guarded_model_id = tool.capability or "", guarded.model_id or ""
        _, question.frame = frames.question_ask(ctx.session_id, question.interrupt_id, kind, fields, message_id=writer.id,
                                                call_id=part["callID"], subagent_id=ctx.subagent_id)
        question.save(force_insert=True)
        return question.frame

    await events.apublish(ctx.session_id, frames.QUESTION_ASK, await in_thread(store)())


def _permission_fields(tool: Tool, arguments: dict) -> dict:
    shown = json.dumps(arguments, ensure_ascii=False)
    return {
        "question": f"Allow the agent to run {tool.name}{' ' + shown if len(shown) <= 300 else ''}? It cannot be undone.",
        "header": "Permission",
        "options": PERMISSION_OPTIONS,
        "permission": {"tool": tool.name, "input": arguments},
    }


def _allowed_for_session(session_id: str, tool_name: str) -> bool:
    return tool_name in (ChatSession.objects.filter(pk=session_id).values_list("allowed_tools", flat=True).first() or [])


@transaction.atomic
def _allow_for_session(session_id: str, tool_name: str) -> None:
    session = ChatSession.objects.select_for_update().get(pk=session_id)
    if tool_name not in session.allowed_tools:
        session.allowed_tools = [*session.allowed_tools, tool_name]
        session.save(update_fields=["allowed_tools"])


# --- calls -------------------------------------------------------------------------------------------------------


def _checked_call_sync(ctx: TurnContext, tool: Tool, arguments: dict) -> ToolCall:
    """The call, once its model is one of the session's and the user who wrote the message may make it."""
    model_id = checked_model(ctx.session_id, arguments.get("modelId"), ctx.model_id) if tool.takes_model else None
    require_tool(ctx.acting_user, tool, session_id=ctx.session_id, project_id=ctx.project_id, model_id=model_id)
    return ToolCall(ctx, arguments, model_id)


async def _checked_call(ctx: TurnContext, tool: Tool, arguments: dict) -> ToolCall:
    return await in_thread(_checked_call_sync)(ctx, tool, arguments)


async def execute(ctx: TurnContext, writer: MessageWriter, part: dict, tool: Tool, arguments: dict) -> CallEnd:
    """Runs an allowed call whose part is running (off the loop, see execution.py); a broken tool is the model's to
    read about, not a crashed turn."""
    ctx.current_call = part["callID"]
    try:
        result: ToolResult = await run_tool(tool, await _checked_call(ctx, tool, arguments), part)
    except Suspended:
        return CallEnd.SUSPENDED
    except ToolError as exc:
        await _fail_call(ctx, writer, part, str(exc))
        return CallEnd.DONE
    except Exception as exc:  # noqa: BLE001
        logger.exception("tool %s failed", part["tool"])
        await _fail_call(ctx, writer, part, f"{type(exc).__name__}: {exc}")
        return CallEnd.DONE
    await _set_state(ctx, writer, part, tool_completed(part["state"], arguments, result.output, title=result.title, metadata=result.metadata))
    for event, data in result.frames:
        await events.apublish_for_viewer(ctx.session_id, event, frames.viewer_frame(ctx.session_id, data, ctx.subagent_id))
    return CallEnd.DONE


async def run_call(ctx: TurnContext, writer: MessageWriter, part: dict) -> CallEnd:
    """One call, in order: its arguments and its model are checked, then it asks the user (ask_user), or asks for
    permission (an irreversible tool not allowed for the session), or runs."""
    tool = ctx.tools.get(part["tool"])
    try:
        if tool is None:
            raise ToolError(f"unknown tool {part['tool']!r}; available: {', '.join(sorted(ctx.tools))}")
        arguments = tool.parse_arguments(part["state"].get("raw", ""))
        call = await _checked_call(ctx, tool, arguments)  # a call outside the session's scope or the user's rights is refused before anyone is asked
    except ToolError as exc:
        await _fail_call(ctx, writer, part, str(exc))
        return CallEnd.DONE
    await _set_state(ctx, writer, part, tool_running(arguments))
    ctx.current_call = part["callID"]
    if tool.suspends_turn:
        await _ask(ctx, writer, part, PendingQuestion.Kind.QUESTION, {
            "question": arguments["question"], "header": arguments.get("header", ""), "options": arguments.get("options", []),
            "multiple": bool(arguments.get("multiple", False)),
        })
        return CallEnd.SUSPENDED
    if tool.irreversible and not await in_thread(_allowed_for_session)(ctx.session_id, tool.name):
        await _ask(ctx, writer, part, PendingQuestion.Kind.PERMISSION, _permission_fields(tool, arguments), guarded=call)
        return CallEnd.SUSPENDED
    return await execute(ctx, writer, part, tool, arguments)


async def _skip(ctx: TurnContext, writer: MessageWriter, parts: list[dict], why: str) -> None:
    for part in parts:
        await _fail_call(ctx, writer, part, why)


async def run_calls(ctx: TurnContext, writer: MessageWriter, parts: list[dict]) -> CallEnd:
    """The calls of a step, in order, then the step's end; SUSPENDED leaves the rest pending for the answer."""
    for index, part in enumerate(parts):
        end = await run_call(ctx, writer, part)
        if end is CallEnd.SUSPENDED:
            return end
        if end is CallEnd.REJECTED:
            await _skip(ctx, writer, parts[index + 1:], HELD_AFTER_REJECT)
            break
    await _finish_step(ctx, writer, "tool-calls")
    return CallEnd.DONE


# --- steps -------------------------------------------------------------------------------------------------------


async def _step(ctx: TurnContext, history: list[dict]) -> Outcome | None:
    writer = MessageWriter(ctx.session_id, assistant_info(ctx), ctx.subagent_id, ctx.turn_id)
    ctx.writer = writer
    await writer.publish_info()
    await writer.publish_part(writer.new_part("step-start"))
    streamed: dict[str, dict] = {}  # "text" / "reasoning" -> part
    calls: dict[int, dict] = {}  # index -> {"part": ..., "raw": ...}, in the order the model gave them
    finish = "stop"
    async for chunk in ctx.llm.stream(history, [tool.spec() for tool in ctx.tools.values()]):
        if isinstance(chunk, (TextDelta, ReasoningDelta)):
            kind = "text" if isinstance(chunk, TextDelta) else "reasoning"
            if kind not in streamed:
                streamed[kind] = await writer.publish_part(streamed_part(ctx.session_id, writer.id, kind))
            await writer.delta(streamed[kind], chunk.text)
        elif isinstance(chunk, ToolCallDelta):
            call = calls.get(chunk.index)
            if call is None:
                call_id = chunk.id or f"call_{secrets.token_hex(8)}"
                part = tool_part(ctx.session_id, writer.id, call_id, chunk.name or "")
                call = calls[chunk.index] = {"part": part, "raw": ""}
                ctx.open_parts[part["id"]] = part
                await writer.publish_part(part)
            elif chunk.name and not call["part"]["tool"]:
                call["part"]["tool"] = chunk.name
            call["raw"] += chunk.arguments
        elif isinstance(chunk, Usage):
            writer.info["tokens"] = {"input": chunk.input - chunk.cached, "output": chunk.output, "reasoning": chunk.reasoning, "cache": {"read": chunk.cached, "write": 0}}
            writer.info["cost"] = context.cost_of(writer.info["tokens"])
            await in_thread(context.record_usage)(ctx.session_id, writer.info["tokens"], writer.info["cost"])
        elif isinstance(chunk, Finish):
            finish = chunk.reason
    for part in streamed.values():
        part["time"]["end"] = now_ms()
        await writer.publish_part(part)
    if not calls:
        await _finish_step(ctx, writer, "length" if finish == "length" else "stop")
        return Outcome.FINISHED
    parts = []
    for call in calls.values():  # complete arguments are kept with the pending call, so a held call can run later
        part = call["part"]
        part["state"] = tool_pending(_parsed_or_empty(call["raw"]), call["raw"])
        await writer.publish_part(part)
        parts.append(part)
    end = await run_calls(ctx, writer, parts)
    return Outcome.SUSPENDED if end is CallEnd.SUSPENDED else None


def _parsed_or_empty(raw: str) -> dict:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _history(ctx: TurnContext) -> list[dict]:
    tools = [tool.spec() for tool in ctx.tools.values()]
    history, _ = context.fitted_history(ctx.session_id, ctx.turn_id if not ctx.subagent_id else None, ctx.system_prompt, tools,
                                        lambda session_id: build_history(session_id, ctx.subagent_id))
    return history


async def run_turn(ctx: TurnContext) -> Outcome:
    for _ in range(MAX_STEPS):
        history = await in_thread(_history)(ctx)
        outcome = await _step(ctx, history)
        if outcome is not None:
            return outcome
    writer = MessageWriter(ctx.session_id, assistant_info(ctx), ctx.subagent_id, ctx.turn_id)
    await writer.publish_info()
    await writer.publish_part(text_part(ctx.session_id, writer.id, f"Stopped after {MAX_STEPS} steps without finishing.", now_ms()))
    await _complete(writer, "length")
    return Outcome.FINISHED


# --- resuming after an answer ------------------------------------------------------------------------------------


def _held_calls(message_id: str, after_part_id: str) -> list[dict]:
    """The calls of a step still pending after the given one, in order."""
    rows = Part.objects.filter(message_id=message_id, type="tool", id__gt=after_part_id).order_by("id")
    return [row.data for row in rows if row.data["state"]["status"] == "pending"]


def _question_call(question: PendingQuestion) -> tuple[Message, dict | None]:
    message = Message.objects.get(pk=question.message_id)
    row = message.parts.filter(type="tool", data__callID=question.call_id).first()
    return message, (row.data if row is not None else None)


async def _answer_call(ctx: TurnContext, writer: MessageWriter, part: dict, question: PendingQuestion) -> CallEnd:
    state = part["state"]
    if question.kind == PendingQuestion.Kind.QUESTION:
        asked = question.frame["question"]
        await _set_state(ctx, writer, part, tool_completed(state, state.get("input", {}), f'User has answered your question: "{asked}"="{question.answer}"',
                                                           title="Asked 1 question", metadata={"answers": [question.answer]}))
        return CallEnd.DONE
    decision, reason = parse_permission_answer(question.answer) or ("reject", question.answer)
    if decision == "reject":
        await _fail_call(ctx, writer, part, f"The user rejected this call{': ' + reason if reason else '.'}", metadata={"rejected": True})
        return CallEnd.REJECTED
    if decision == "always":
        await in_thread(_allow_for_session)(ctx.session_id, part["tool"])
    await _set_state(ctx, writer, part, tool_running(state.get("input") or {}, metadata={"permitted": decision}))
    return await execute(ctx, writer, part, ctx.tools[part["tool"]], state.get("input") or {})


async def resume_turn(ctx: TurnContext, question: PendingQuestion) -> Outcome:
    """Goes on with the turn that waited for `question`: the question's call ends with the answer (or runs, when
    permitted), the calls held after it run, then the next steps."""
    if question.subagent_id != ctx.subagent_id:  # a sub-agent's question: the tool that runs sub-agents goes on with it
        resuming = next(tool for tool in ctx.tools.values() if tool.on_resume is not None)
        return await resuming.on_resume(ctx, question)
    message, part = await in_thread(_question_call)(question)
    writer = writer_for(message)
    ctx.writer = writer
    end = await _answer_call(ctx, writer, part, question) if part is not None else CallEnd.DONE
    return await continue_step(ctx, writer, part["id"] if part else "", end)


async def continue_step(ctx: TurnContext, writer: MessageWriter, after_part_id: str, end: CallEnd) -> Outcome:
    """After a held call ended: the rest of its step, then the turn's next steps."""
    if end is CallEnd.SUSPENDED:
        return Outcome.SUSPENDED
    held = await in_thread(_held_calls)(writer.id, after_part_id)
    if end is CallEnd.REJECTED:
        await _skip(ctx, writer, held, HELD_AFTER_REJECT)
        await _finish_step(ctx, writer, "tool-calls")
    elif await run_calls(ctx, writer, held) is CallEnd.SUSPENDED:
        return Outcome.SUSPENDED
    return await run_turn(ctx)


async def end_unanswered(ctx: TurnContext, question: PendingQuestion) -> None:
    """A new message came instead of the answer: the question's call fails, the calls it held are not run, and the
    step ends (a sub-agent's question ends its delegation the same way)."""
    message, part = await in_thread(_question_call)(question)
    writer = writer_for(message)
    if part is not None:
        await _fail_call(ctx, writer, part, NOT_ANSWERED)
        await _skip(ctx, writer, await in_thread(_held_calls)(message.id, part["id"]), HELD_AFTER_NEW_MESSAGE)
    await _finish_step(ctx, writer, "tool-calls")


async def close_aborted(ctx: TurnContext) -> None:
    """After a cancellation: every unfinished tool part of the message being written fails as aborted and the
    message ends with MessageAbortedError (what is left elsewhere in the turn, see turn.close_open_work)."""
    writer = ctx.writer
    if writer is None:
        return
    for part in list(ctx.open_parts.values()):
        await _fail_call(ctx, writer, part, ABORTED, metadata={**(part["state"].get("metadata") or {}), "interrupted": True})
    ctx.open_parts.clear()
    await _complete(writer, None, {"name": "MessageAbortedError", "data": {"message": "aborted by the user"}})
    ctx.writer = None
