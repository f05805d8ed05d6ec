"""One turn of the agent: model steps with streamed parts and tool calls, until the model stops, or asks the user
(the turn is suspended until the answer arrives, in whichever process), or is aborted.

The loop keeps no state between steps but the database: every step starts from the stored history, so a turn
resumes after an answer, a reload or a restart exactly where it stood."""

from __future__ import annotations

import enum
import json
import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

from chat_app import events
from chat_app.agent.chunks import Finish, ReasoningDelta, TextDelta, ToolCallDelta, Usage
from chat_app.agent.tools import Tool, ToolError, ToolResult, in_thread
from chat_app.agent.writer import MessageWriter, now_ms
from chat_app.models import Message, PendingQuestion

logger = logging.getLogger(__name__)

MAX_STEPS = 25
ABORTED = "Tool execution aborted"
INTERRUPTED = "[Tool execution was interrupted]"


class Outcome(enum.Enum):
    FINISHED = "finished"
    SUSPENDED = "suspended"


@dataclass
class TurnContext:
    session_id: str
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
    current_call: str = ""  # callID of the tool running now
    # what an abort must close: the assistant message being written and its unfinished tool parts
    writer: MessageWriter | None = None
    open_parts: dict[str, dict] = field(default_factory=dict)


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
    messages = Message.objects.filter(session_id=session_id, subagent_id=subagent_id).exclude(state=Message.State.QUEUED)
    for message in messages.prefetch_related("parts"):
        parts = [p.data for p in message.parts.all()]
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
    if state["status"] in ("completed", "error"):
        ctx.open_parts.pop(part["id"], None)
    else:
        ctx.open_parts[part["id"]] = part
    await writer.publish_part(part)


async def _ask(ctx: TurnContext, writer: MessageWriter, part: dict, arguments: dict) -> None:
    def store() -> dict:
        question = PendingQuestion(session_id=ctx.session_id, message_id=writer.id, call_id=part["callID"])
        question.frame = {
            "sessionID": ctx.session_id,
            "interruptId": question.interrupt_id,
            "question": arguments["question"],
            "header": arguments.get("header", ""),
            "options": arguments.get("options", []),
            "multiple": bool(arguments.get("multiple", False)),
            "custom": True,
            "tool": {"messageID": writer.id, "callID": part["callID"]},
            **({"subagentId": ctx.subagent_id} if ctx.subagent_id else {}),
        }
        question.save(force_insert=True)
        return question.frame

    frame = await in_thread(store)()
    await events.apublish(ctx.session_id, "question.ask", frame)


async def _run_tool(ctx: TurnContext, writer: MessageWriter, part: dict, tool: Tool | None, raw: str) -> bool:
    """Runs one call; True when the turn is now suspended on a question."""
    started = now_ms()
    try:
        if tool is None:
            raise ToolError(f"unknown tool {part['tool']!r}; available: {', '.join(sorted(ctx.tools))}")
        arguments = tool.parse_arguments(raw)
    except ToolError as exc:
        await _set_state(ctx, writer, part, {"status": "error", "input": {}, "error": str(exc), "time": {"start": started, "end": now_ms()}})
        return False
    await _set_state(ctx, writer, part, {"status": "running", "input": arguments, "time": {"start": started}})
    ctx.current_call = part["callID"]
    if tool.suspends_turn:
        await _ask(ctx, writer, part, arguments)
        return True
    try:
        result: ToolResult = await tool.run(ctx, arguments)
    except ToolError as exc:
        await _set_state(ctx, writer, part, {"status": "error", "input": arguments, "error": str(exc), "time": {"start": started, "end": now_ms()}})
        return False
    except Exception as exc:  # noqa: BLE001 - a broken tool is the model's to read about, not a crashed turn
        logger.exception("tool %s failed", part["tool"])
        await _set_state(ctx, writer, part, {"status": "error", "input": arguments, "error": f"{type(exc).__name__}: {exc}", "time": {"start": started, "end": now_ms()}})
        return False
    await _set_state(ctx, writer, part, {
        "status": "completed", "input": arguments, "output": result.output, "title": result.title,
        "metadata": result.metadata, "time": {"start": started, "end": now_ms()},
    })
    for event, data in getattr(result, "frames", ()):
        await events.apublish(ctx.session_id, event, {"sessionID": ctx.session_id, **data})
    return False


async def _step(ctx: TurnContext, history: list[dict]) -> Outcome | None:
    writer = MessageWriter(ctx.session_id, assistant_info(ctx), ctx.subagent_id)
    ctx.writer = writer
    await writer.publish_info()
    await writer.publish_part(writer.new_part("step-start"))
    streamed: dict[str, dict] = {}  # "text" / "reasoning" -> part
    calls: dict[int, dict] = {}  # index -> {"part": ..., "raw": ...}
    finish = "stop"
    async for chunk in ctx.llm.stream(history, [tool.spec() for tool in ctx.tools.values()]):
        if isinstance(chunk, (TextDelta, ReasoningDelta)):
            kind = "text" if isinstance(chunk, TextDelta) else "reasoning"
            if kind not in streamed:
                streamed[kind] = await writer.publish_part(writer.new_part(kind, text="", time={"start": now_ms()}))
            await writer.delta(streamed[kind], chunk.text)
        elif isinstance(chunk, ToolCallDelta):
            call = calls.get(chunk.index)
            if call is None:
                call_id = chunk.id or f"call_{secrets.token_hex(8)}"
                part = writer.new_part("tool", callID=call_id, tool=chunk.name or "", state={"status": "pending", "input": {}, "raw": ""})
                call = calls[chunk.index] = {"part": part, "raw": ""}
                ctx.open_parts[part["id"]] = part
                await writer.publish_part(part)
            elif chunk.name and not call["part"]["tool"]:
                call["part"]["tool"] = chunk.name
            call["raw"] += chunk.arguments
        elif isinstance(chunk, Usage):
            writer.info["tokens"].update(input=chunk.input, output=chunk.output, reasoning=chunk.reasoning)
        elif isinstance(chunk, Finish):
            finish = chunk.reason
    for part in streamed.values():
        part["time"]["end"] = now_ms()
        await writer.publish_part(part)
    # a question is asked last, after the step's other calls ran
    ordered = sorted(calls.values(), key=lambda c: bool(ctx.tools.get(c["part"]["tool"]) and ctx.tools[c["part"]["tool"]].suspends_turn))
    for call in ordered:
        if await _run_tool(ctx, writer, call["part"], ctx.tools.get(call["part"]["tool"]), call["raw"]):
            return Outcome.SUSPENDED
    await _finish_step(writer, "tool-calls" if calls else ("length" if finish == "length" else "stop"))
    ctx.writer = None
    return None if calls else Outcome.FINISHED


async def _finish_step(writer: MessageWriter, reason: str) -> None:
    await writer.publish_part(writer.new_part("step-finish", reason=reason, tokens=writer.info["tokens"], cost=0))
    await _complete(writer, reason)


async def run_turn(ctx: TurnContext) -> Outcome:
    for _ in range(MAX_STEPS):
        history = await in_thread(build_history)(ctx.session_id, ctx.subagent_id)
        if ctx.system_prompt:
            history.insert(0, {"role": "system", "content": ctx.system_prompt})
        outcome = await _step(ctx, history)
        if outcome is not None:
            return outcome
    writer = MessageWriter(ctx.session_id, assistant_info(ctx), ctx.subagent_id)
    await writer.publish_info()
    await writer.publish_part(writer.new_part("text", text=f"Stopped after {MAX_STEPS} steps without finishing.", time={"start": now_ms(), "end": now_ms()}))
    await _complete(writer, "length")
    return Outcome.FINISHED


def _writer_for(message: Message) -> MessageWriter:
    writer = MessageWriter(message.session_id, message.info, message.subagent_id)
    writer.info = message.info
    return writer


async def close_question(session_id: str, question: PendingQuestion, *, answer: str | None, error: str | None = None, aborted: bool = False) -> None:
    """Ends the ask_user call of a question: completed with the answer, or an error (not answered, aborted); the
    step's message is completed too."""
    message = await in_thread(lambda: Message.objects.get(pk=question.message_id))()
    part_row = await in_thread(lambda: message.parts.filter(type="tool", data__callID=question.call_id).first())()
    writer = _writer_for(message)
    if part_row is not None:
        part = part_row.data
        state = part["state"]
        ended = {"start": state.get("time", {}).get("start", now_ms()), "end": now_ms()}
        if answer is not None:
            asked = question.frame["question"]
            part["state"] = {"status": "completed", "input": state.get("input", {}), "output": f'User has answered your question: "{asked}"="{answer}"',
                             "title": "Asked 1 question", "metadata": {"answers": [answer]}, "time": ended}
        else:
            part["state"] = {"status": "error", "input": state.get("input", {}), "error": error or ABORTED, "time": ended,
                             **({"metadata": {"interrupted": True}} if aborted else {})}
        await writer.publish_part(part)
    if aborted:
        await _complete(writer, None, {"name": "MessageAbortedError", "data": {"message": "aborted by the user"}})
    else:
        await _finish_step(writer, "tool-calls")


async def close_aborted(ctx: TurnContext) -> None:
    """After a cancellation: every unfinished tool part fails as aborted and the message being written ends with
    MessageAbortedError."""
    writer = ctx.writer
    if writer is None:
        return
    for part in list(ctx.open_parts.values()):
        state = part["state"]
        part["state"] = {"status": "error", "input": state.get("input", {}), "error": ABORTED, "metadata": {"interrupted": True},
                         "time": {"start": state.get("time", {}).get("start", now_ms()), "end": now_ms()}}
        await writer.publish_part(part)
    ctx.open_parts.clear()
    await _complete(writer, None, {"name": "MessageAbortedError", "data": {"message": "aborted by the user"}})
    ctx.writer = None
