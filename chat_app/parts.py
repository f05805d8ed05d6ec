"""The parts of a message and the states of a tool part, as the frames and GET messages carry them
(design/agent-events.md; opencode's message-v2): one constructor each, so every module builds them the same way.

Parts stay plain dicts (they are stored as JSON, published as they stand and changed in place while a step streams);
the TypedDicts say which fields each one has.

    pending --> running --> completed
        \\           \\----> error
         \\--------------> error (its arguments were wrong, or it was held and never ran)"""

from __future__ import annotations

import time
from typing import Literal, NotRequired, TypedDict

from chat_app.models import sortable_id


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class TimeSpan(TypedDict, total=False):
    start: int
    end: int


class PendingState(TypedDict):
    status: Literal["pending"]
    input: dict
    raw: str  # the arguments as the model streamed them


class RunningState(TypedDict):
    status: Literal["running"]
    input: dict
    time: TimeSpan
    metadata: NotRequired[dict]


class CompletedState(TypedDict):
    status: Literal["completed"]
    input: dict
    output: str
    title: str
    metadata: dict
    time: TimeSpan


class ErrorState(TypedDict):
    status: Literal["error"]
    input: dict
    error: str
    time: TimeSpan
    metadata: NotRequired[dict]


ToolState = PendingState | RunningState | CompletedState | ErrorState
ENDED = ("completed", "error")


class Part(TypedDict):
    id: str
    sessionID: str
    messageID: str
    type: str
    subagentId: NotRequired[str]


class TextPart(Part):
    text: str
    time: TimeSpan


class ReasoningPart(TextPart):
    pass


class ToolPart(Part):
    callID: str
    tool: str
    state: ToolState


def new_part(session_id: str, message_id: str, part_type: str, **fields) -> dict:
    """A part of any type (step-start, step-finish, compaction, ...) with a new id."""
    return {"id": sortable_id("prt_"), "sessionID": session_id, "messageID": message_id, "type": part_type, **fields}


def text_part(session_id: str, message_id: str, text: str, at: int, *, part_id: str | None = None, **tags) -> TextPart:
    """A finished text part written at once (a user's message, a sub-agent's task)."""
    return {"id": part_id or sortable_id("prt_"), "sessionID": session_id, "messageID": message_id, "type": "text", "text": text,
            "time": {"start": at, "end": at}, **tags}


def streamed_part(session_id: str, message_id: str, part_type: Literal["text", "reasoning"]) -> TextPart | ReasoningPart:
    """A text or reasoning part whose text the model is about to stream (time.end is set when it stops)."""
    return new_part(session_id, message_id, part_type, text="", time={"start": now_ms()})


def tool_part(session_id: str, message_id: str, call_id: str, tool: str) -> ToolPart:
    """A tool call the model has begun to stream."""
    return new_part(session_id, message_id, "tool", callID=call_id, tool=tool, state=tool_pending())


def tool_pending(input: dict | None = None, raw: str = "") -> PendingState:
    return {"status": "pending", "input": input or {}, "raw": raw}


def tool_running(input: dict, *, metadata: dict | None = None) -> RunningState:
    state: RunningState = {"status": "running", "input": input, "time": {"start": now_ms()}}
    if metadata is not None:
        state["metadata"] = metadata
    return state


def tool_completed(state: ToolState, input: dict, output: str, *, title: str, metadata: dict) -> CompletedState:
    """The call of `state` (its start is kept) completed with `output`."""
    return {"status": "completed", "input": input, "output": output, "title": title, "metadata": metadata, "time": ended(state)}


def tool_error(state: ToolState, error: str, **extra) -> ErrorState:
    """The call of `state` (its input and start are kept) failed with `error`; extra: metadata."""
    return {"status": "error", "input": state.get("input") or {}, "error": error, "time": ended(state), **extra}


def ended(state: ToolState) -> TimeSpan:
    """The time of a call that ends now."""
    return {"start": state.get("time", {}).get("start", now_ms()), "end": now_ms()}
