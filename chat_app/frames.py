"""The frames of the session event stream (interface spec, Events; design/agent-events.md): their names and one
builder per frame, returning (event, data) as events.publish takes it and ToolResult.frames holds it.

The names come from frames.json beside this module, which the web client imports too (frontend/src/chat.js), so
both sides read them from one file. A frame raised for a sub-agent carries its subagentId (`tagged`)."""

from __future__ import annotations

import json
from pathlib import Path

from chat_app.parts import now_ms

NAMES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "frames.json").read_text(encoding="utf-8"))

SESSION_CREATING = NAMES["SESSION_CREATING"]
SESSION_STATUS = NAMES["SESSION_STATUS"]
MESSAGE = NAMES["MESSAGE"]
MESSAGE_UPDATED = NAMES["MESSAGE_UPDATED"]
MESSAGE_PART_UPDATED = NAMES["MESSAGE_PART_UPDATED"]
MESSAGE_PART_DELTA = NAMES["MESSAGE_PART_DELTA"]
SUBAGENT_STATUS = NAMES["SUBAGENT_STATUS"]
QUESTION_ASK = NAMES["QUESTION_ASK"]
VIEWER_STAGED = NAMES["VIEWER_STAGED"]
VIEWER_COMMITTED = NAMES["VIEWER_COMMITTED"]
VIEWER_NOTIFY_FAILED = NAMES["VIEWER_NOTIFY_FAILED"]
MODEL_CREATED = NAMES["MODEL_CREATED"]
SESSION_ERROR = NAMES["SESSION_ERROR"]
SESSION_IDLE = NAMES["SESSION_IDLE"]

Frame = tuple[str, dict]


def tagged(data: dict, subagent_id: str = "") -> dict:
    return {**data, "subagentId": subagent_id} if subagent_id else data


def session_creating(session_id: str, project_id: str, model_id: str) -> Frame:
    return SESSION_CREATING, {"sessionID": session_id, "projectId": project_id, "modelId": model_id}


def session_status(session_id: str, status: str) -> Frame:
    return SESSION_STATUS, {"sessionID": session_id, "status": status}


def session_idle() -> Frame:
    return SESSION_IDLE, {}


def session_error(session_id: str, error: dict) -> Frame:
    """error: {name, data: {message, ...}}, as an assistant message's error."""
    return SESSION_ERROR, {"sessionID": session_id, "error": error}


def message(session_id: str, info: dict, parts: list[dict], *, resync: bool = False, subagent_id: str = "") -> Frame:
    """A whole message: a user's message when its turn starts, or one message of a snapshot (resync)."""
    data = {"sessionID": session_id, "info": info, "parts": parts}
    if resync:
        data["resync"] = True
    return MESSAGE, tagged(data, subagent_id)


def message_updated(session_id: str, info: dict, subagent_id: str = "") -> Frame:
    return MESSAGE_UPDATED, tagged({"sessionID": session_id, "info": info}, subagent_id)


def message_part_updated(session_id: str, part: dict, subagent_id: str = "") -> Frame:
    return MESSAGE_PART_UPDATED, tagged({"sessionID": session_id, "part": part, "time": now_ms()}, subagent_id)


def message_part_delta(session_id: str, message_id: str, part_id: str, field: str, delta: str, subagent_id: str = "") -> Frame:
    return MESSAGE_PART_DELTA, tagged({"sessionID": session_id, "messageID": message_id, "partID": part_id, "field": field, "delta": delta}, subagent_id)


def question_ask(session_id: str, interrupt_id: str, kind: str, fields: dict, *, message_id: str, call_id: str, subagent_id: str = "") -> Frame:
    """A question (kind question) or a permission request (kind permission) of the tool call message_id/call_id;
    fields: question, header, options, multiple (and permission). The data is stored with the pending question."""
    return QUESTION_ASK, tagged({
        "sessionID": session_id, "interruptId": interrupt_id, "header": "", "options": [], "multiple": False, **fields, "custom": True,
        "tool": {"messageID": message_id, "callID": call_id}, "kind": kind,
    }, subagent_id)


def subagent(session_id: str, subagent_id: str, persona: str, task: str, *, message_id: str, call_id: str, start: int) -> dict:
    """What every subagent.status frame of one delegation says: the sub-agent, its task and the delegate call."""
    return {"sessionID": session_id, "subagentId": subagent_id, "persona": persona, "task": task,
            "parent": {"messageID": message_id, "callID": call_id}, "time": {"start": start}}


def subagent_status(status: dict, state: str, **fields) -> Frame:
    """status: subagent(...), its time.end set once it ended; state: running, completed (with result), error (with
    error) or aborted."""
    return SUBAGENT_STATUS, {**status, "status": state, **fields}


def viewer_staged(model_id: str, kind: str, source: str, semantic_diff: dict | None) -> Frame:
    """A tool's frame (ToolResult.frames): published with the session's id and the sub-agent's tag (viewer_frame)."""
    return VIEWER_STAGED, {"modelId": model_id, "kind": kind, "source": source, "semanticDiff": semantic_diff}


def viewer_committed(model_id: str, kind: str, version: str) -> Frame:
    return VIEWER_COMMITTED, {"modelId": model_id, "kind": kind, "version": version}


def model_created(model_id: str, kind: str, title: str, project_id: str) -> Frame:
    return MODEL_CREATED, {"modelId": model_id, "kind": kind, "title": title, "projectId": project_id}


def viewer_frame(session_id: str, data: dict, subagent_id: str = "") -> dict:
    """The data of a frame the viewer acts on (viewer.staged, viewer.committed, model.created) as it is published."""
    return tagged({"sessionID": session_id, **data}, subagent_id)


def viewer_notify_failed(session_id: str, event: str, data: dict, error: str) -> Frame:
    """`event` (with `data`) could not be delivered."""
    return VIEWER_NOTIFY_FAILED, tagged({"sessionID": session_id, "modelId": data.get("modelId", ""), "event": event, "error": error},
                                        data.get("subagentId", ""))
