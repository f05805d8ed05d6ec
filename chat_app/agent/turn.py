"""What the agent does with a piece of work the lifecycle gave this process (lifecycle.Work): start a turn, go on
with it after an answer, end it because a new message came instead of the answer, abort it, or end it because its
process died. Every outcome ends in a lifecycle transition: the turn finishes (idle) or waits for the user."""

from __future__ import annotations

import asyncio
import logging

from chat_app import events, frames, lifecycle
from chat_app.agent import runtime
from chat_app.agent.loop import ABORTED, NOT_ANSWERED, Outcome, TurnContext, close_aborted, end_unanswered, resume_turn, run_turn
from chat_app.models import Message, Part, PendingQuestion, Turn
from chat_app.parts import now_ms, tool_error
from chat_app.threads import in_thread

logger = logging.getLogger(__name__)

ABORTED_ERROR = {"name": "MessageAbortedError", "data": {"message": "aborted by the user"}}
INTERRUPTED_ERROR = {"name": "MessageAbortedError", "data": {"message": "a new message came instead of the answer"}}
CUT_ERROR = {"name": "UnknownError", "data": {"message": "the gateway restarted during this turn"}}


def close_open_work(turn: Turn, *, error: str, message_error: dict) -> None:
    """Everything of the turn still open ends: pending and running tool parts fail with `error`, unfinished
    messages end with `message_error`, open questions are rejected, running sub-agents are reported aborted."""
    session_id = turn.session_id
    turn.questions.filter(state__in=PendingQuestion.OPEN).update(state=PendingQuestion.State.REJECTED)
    for message in Message.objects.filter(turn=turn).order_by("id"):
        for row in Part.objects.filter(message=message, type="tool").order_by("id"):
            part, state = row.data, row.data["state"]
            if state["status"] not in ("pending", "running"):
                continue
            if part["tool"] == "delegate" and (state.get("metadata") or {}).get("subagentId"):
                metadata = state["metadata"]
                status = frames.subagent(session_id, metadata["subagentId"], metadata.get("persona", ""), (state.get("input") or {}).get("task", ""),
                                         message_id=message.id, call_id=part["callID"], start=metadata.get("started", now_ms()))
                status["time"]["end"] = now_ms()
                events.publish(session_id, *frames.subagent_status(status, "aborted"))
            part["state"] = tool_error(state, error, metadata={"interrupted": True})
            row.save(update_fields=["data"])
            events.publish(session_id, *frames.message_part_updated(session_id, part, message.subagent_id))
        if message.role == Message.Role.ASSISTANT and not message.info.get("time", {}).get("completed"):
            message.info["time"]["completed"] = now_ms()
            message.info["error"] = message_error
            message.save(update_fields=["info"])
            events.publish(session_id, *frames.message_updated(session_id, message.info, message.subagent_id))


def _end_cut(turn: Turn) -> None:
    close_open_work(turn, error="interrupted by a gateway restart", message_error=CUT_ERROR)
    events.publish(turn.session_id, *frames.session_error(turn.session_id, {"name": "UnknownError", "data": {"message": "the turn was cut by a gateway restart"}}))
    lifecycle.finish(turn, Turn.Outcome.CUT)


def _end_aborted(turn: Turn) -> None:
    close_open_work(turn, error=ABORTED, message_error=ABORTED_ERROR)
    lifecycle.finish(turn, Turn.Outcome.ABORTED)


async def perform(work: lifecycle.Work) -> None:
    turn = work.turn
    if work.kind == "cut":
        await in_thread(_end_cut)(turn)
        return
    if work.kind == "abort":
        await in_thread(_end_aborted)(turn)
        return
    frame = await in_thread(lifecycle.run)(work)
    ctx = await in_thread(runtime.turn_context)(turn)
    if work.kind == "reject":
        if work.question is not None:
            await in_thread(lambda: PendingQuestion.objects.filter(pk=work.question.pk).update(state=PendingQuestion.State.REJECTED))()
            await end_unanswered(_context_of(ctx, work.question), work.question)
        # a sub-agent's unanswered question also ends its delegation
        await in_thread(close_open_work)(turn, error=NOT_ANSWERED, message_error=INTERRUPTED_ERROR)
        await in_thread(lifecycle.finish)(turn, Turn.Outcome.INTERRUPTED)
        return
    if work.kind == "start":
        await events.apublish(turn.session_id, *frames.session_status(turn.session_id, "busy"))
        await events.apublish(turn.session_id, *frame)
        ctx.user_message_id = turn.user_message_id
        task = asyncio.get_running_loop().create_task(run_turn(ctx))
    else:
        await in_thread(lambda: PendingQuestion.objects.filter(pk=work.question.pk).update(state=PendingQuestion.State.CLOSED))()
        task = asyncio.get_running_loop().create_task(resume_turn(ctx, work.question))
    watcher = asyncio.get_running_loop().create_task(lifecycle.watch(turn, task))
    try:
        outcome = await task
    except asyncio.CancelledError:
        if asyncio.current_task().cancelling():
            raise  # the drain itself is being cancelled (server shutdown)
        await close_aborted(ctx)
        await in_thread(_end_aborted)(turn)
        return
    except Exception as exc:  # noqa: BLE001 - a provider or runtime failure ends the turn with session.error
        logger.exception("chat session %s: turn %s failed", turn.session_id, turn.id)
        await _end_failed(ctx, turn, exc)
        return
    finally:
        watcher.cancel()
    if outcome is Outcome.SUSPENDED:
        await in_thread(lifecycle.suspend)(turn)
    else:
        await in_thread(lifecycle.finish)(turn, Turn.Outcome.COMPLETED)


def _context_of(ctx: TurnContext, question: PendingQuestion) -> TurnContext:
    """The context a question was asked in: the main agent's, or its sub-agent's (same session and turn)."""
    if not question.subagent_id:
        return ctx
    return TurnContext(session_id=ctx.session_id, turn_id=ctx.turn_id, user_message_id="", llm=ctx.llm, tools={}, subagent_id=question.subagent_id,
                       acting_user=ctx.acting_user, signature=ctx.signature)


async def _end_failed(ctx: TurnContext, turn: Turn, exc: Exception) -> None:
    error = runtime.describe_error(exc)
    if ctx.writer is not None:
        ctx.writer.info["error"] = error
        ctx.writer.info["time"]["completed"] = now_ms()
        await ctx.writer.publish_info()
    await in_thread(close_open_work)(turn, error=f"the turn failed: {error['data']['message']}"[:500], message_error=error)
    await events.apublish(turn.session_id, *frames.session_error(turn.session_id, error))
    await in_thread(lifecycle.finish)(turn, Turn.Outcome.FAILED)
