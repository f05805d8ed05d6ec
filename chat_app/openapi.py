"""The event stream in the gateway's OpenAPI document (an async view outside DRF, so described here); the frame
names come from chat_app/frames.json, as the web client's do."""

from __future__ import annotations

from chat_app.frames import NAMES

EVENT_STREAM_PATH = "/api/v1/chat/sessions/{cid}/events"
EVENTS = ", ".join(NAMES.values())


def add_event_stream(result, generator, request, public):
    result.setdefault("paths", {})[EVENT_STREAM_PATH] = {
        "get": {
            "operationId": "chat_sessions_events",
            "summary": "The session's frames as Server-Sent Events (no envelope)",
            "description": (
                f"Frames `id: <seq>`, `event: <type>`, `data: <json>`; types: {EVENTS}. Heartbeat comment `: ping` "
                "while idle. With Last-Event-ID inside the last 64 frames exactly the missed frames are replayed; an "
                "older or unknown id gets a snapshot (the last turn's messages with resync: true, the status, pending "
                "questions). A fresh stream starts with session.status and pending questions."
            ),
            "tags": ["chat"],
            "parameters": [
                {"name": "cid", "in": "path", "required": True, "schema": {"type": "string", "pattern": "^c_[0-9a-f]{16}$"}},
                {"name": "Last-Event-ID", "in": "header", "required": False, "schema": {"type": "string"}},
            ],
            "responses": {
                "200": {"description": "the stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                "404": {"description": "40400: unknown session", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}},
            },
        }
    }
    result.setdefault("components", {}).setdefault("schemas", {})["ErrorEnvelope"] = {
        "type": "object",
        "required": ["code", "message", "data"],
        "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {"nullable": True}},
    }
    return result
