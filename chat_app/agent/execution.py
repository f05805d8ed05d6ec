"""Running a tool call off the server's event loop, and what an abort does to a call under way.

Every tool function runs in a worker thread of its own pool, so nothing a tool does (a sandbox run behind an HTTP
call, a walk over a large metadata.json) can hold up the loop that serves every request and stream of the gateway.

An abort cancels the awaiting task at once (the turn ends within a second); the call's thread cannot be killed, so:
- the call's CancelGuard is cancelled: the use case stops at its next commit point (core.cancellation), and
  what it had committed before is known exactly and recorded in the aborted part (metadata.committed);
- the sandbox runs of the models the call may build (its model, else every model of the session's project) are
  killed on the edit service, again and again until the thread has ended, so a build started meanwhile dies too;
- if the thread still completes (it was past its last commit point), its result is recorded in the aborted part
  (metadata.completedAfterAbort) and its frames (viewer.committed, model.created) are published, so the viewer
  shows the truth."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import threading
import time

from django.db import connections

from chat_app import events, frames
from chat_app.agent.tools import Tool, ToolCall, ToolResult
from chat_app.models import Part
from chat_app.threads import in_thread
from core.cancellation import CancelGuard, cancellable
from models_app.script_services import script_cancel_runs
from models_app.selectors import project_model_ids

logger = logging.getLogger(__name__)

STOP_INTERVAL_SECONDS = 0.5
STOP_FOR_AT_MOST_SECONDS = 120
LATE_RESULT_WAIT_SECONDS = 10

_pool = concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="tool")


async def run_tool(tool: Tool, call: ToolCall, part: dict) -> ToolResult:
    if tool.native:
        return await tool.run(call)
    guard = CancelGuard()
    origin = call.ctx.subagent_id

    def work() -> ToolResult:
        events.frame_origin.set(origin)
        try:
            with cancellable(guard):
                return tool.run(call)
        finally:
            connections.close_all()  # a worker thread holds no database connection between calls

    future = _pool.submit(contextvars.copy_context().run, work)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        committed = await asyncio.shield(in_thread(guard.cancel)())
        part["state"]["metadata"] = {**(part["state"].get("metadata") or {}), "committed": committed}
        _stop_builds_while(future, call)
        future.add_done_callback(lambda done: _record_late_result(call, part["id"], done, guard, committed))
        raise


def _models_to_stop(call: ToolCall) -> list[str]:
    if call.model_id:
        return [call.model_id]
    return project_model_ids(call.project_id) if call.project_id else []


def _stop_builds_while(future: concurrent.futures.Future, call: ToolCall) -> None:
    def stop() -> None:
        deadline = time.monotonic() + STOP_FOR_AT_MOST_SECONDS
        try:
            while not future.done() and time.monotonic() < deadline:
                for model_id in _models_to_stop(call):  # again each round: a use case may have made a model meanwhile
                    script_cancel_runs(model_id=model_id)
                time.sleep(STOP_INTERVAL_SECONDS)
        finally:
            connections.close_all()

    threading.Thread(target=stop, name="tool-stop", daemon=True).start()


def _record_late_result(call: ToolCall, part_id: str, future: concurrent.futures.Future, guard: CancelGuard, committed_at_abort: list[str]) -> None:
    """The thread of an aborted call ended: what it committed after the abort (an outside service finishing, see
    core.cancellation.record) and a result it still produced are recorded with the aborted part; the
    result's frames are published."""
    result: ToolResult | None = None if future.cancelled() or future.exception() is not None else future.result()
    if result is None and guard.committed == committed_at_abort:
        return
    try:
        deadline = time.monotonic() + LATE_RESULT_WAIT_SECONDS
        row = Part.objects.filter(pk=part_id).first()
        while row is not None and row.data["state"]["status"] in ("pending", "running") and time.monotonic() < deadline:
            time.sleep(0.05)  # the loop closes the part as aborted right after the cancellation
            row = Part.objects.filter(pk=part_id).first()
        if row is not None:
            late = {"committed": list(guard.committed)}
            if result is not None:
                late["completedAfterAbort"] = {"title": result.title, "metadata": result.metadata}
            row.data["state"]["metadata"] = {**(row.data["state"].get("metadata") or {}), **late}
            row.save(update_fields=["data"])
            events.publish(call.session_id, *frames.message_part_updated(call.session_id, row.data, call.ctx.subagent_id))
        for event, data in result.frames if result is not None else ():
            events.publish_for_viewer(call.session_id, event, frames.viewer_frame(call.session_id, data, call.ctx.subagent_id))
    except Exception:  # noqa: BLE001 - a callback of a finished thread: nothing to give an error to
        logger.exception("recording the late result of an aborted %s call failed", call.ctx.session_id)
    finally:
        connections.close_all()
