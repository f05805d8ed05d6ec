"""Messages and parts as a turn produces them: each change is saved and published as its frame.

Frames (design/agent-events.md §4.2): message.updated {sessionID, info}, message.part.updated {sessionID, part,
time}, message.part.delta {sessionID, messageID, partID, field, delta}; a part's deltas follow its first
part.updated and are coalesced to at most one frame per part every DELTA_INTERVAL seconds."""

from __future__ import annotations

import time

from chat_app import events, frames
from chat_app.models import Message, Part, sortable_id
from chat_app.parts import new_part
from chat_app.threads import in_thread

DELTA_INTERVAL = 0.05


def _save_message(message_id: str, session_id: str, role: str, info: dict, subagent_id: str, turn_id: str | None) -> None:
    Message.objects.update_or_create(
        id=message_id, defaults={"session_id": session_id, "role": role, "info": info, "subagent_id": subagent_id, "turn_id": turn_id}
    )


def _save_part(part: dict) -> None:
    Part.objects.update_or_create(id=part["id"], defaults={"message_id": part["messageID"], "type": part["type"], "data": part})


save_message = in_thread(_save_message)
save_part = in_thread(_save_part)


class MessageWriter:
    """Writes one message: its info (message.updated) and its parts (message.part.updated, coalesced deltas)."""

    def __init__(self, session_id: str, info: dict, subagent_id: str = "", turn_id: str | None = None):
        self.session_id = session_id
        self.subagent_id = subagent_id
        self.turn_id = turn_id
        self.info = {"id": info.get("id") or sortable_id("msg_"), "sessionID": session_id, **info}
        if subagent_id:
            self.info["subagentId"] = subagent_id
        self._pending: dict[str, str] = {}  # part id -> text not yet sent as a delta
        self._last_flush: dict[str, float] = {}

    @property
    def id(self) -> str:
        return self.info["id"]

    async def publish_info(self) -> None:
        await save_message(self.id, self.session_id, self.info["role"], self.info, self.subagent_id, self.turn_id)
        await events.apublish(self.session_id, *frames.message_updated(self.session_id, self.info, self.subagent_id))

    def new_part(self, part_type: str, **fields) -> dict:
        return new_part(self.session_id, self.id, part_type, **fields)

    async def publish_part(self, part: dict) -> dict:
        await self.flush(part)
        await save_part(part)
        await events.apublish(self.session_id, *frames.message_part_updated(self.session_id, part, self.subagent_id))
        return part

    async def delta(self, part: dict, text: str, field: str = "text") -> None:
        part[field] = part.get(field, "") + text
        self._pending[part["id"]] = self._pending.get(part["id"], "") + text
        if time.monotonic() - self._last_flush.get(part["id"], 0.0) >= DELTA_INTERVAL:
            await self.flush(part, field)

    async def flush(self, part: dict, field: str = "text") -> None:
        pending = self._pending.pop(part["id"], "")
        if not pending:
            return
        self._last_flush[part["id"]] = time.monotonic()
        await save_part(part)
        await events.apublish(self.session_id, *frames.message_part_delta(self.session_id, self.id, part["id"], field, pending, self.subagent_id))


def writer_for(message: Message) -> MessageWriter:
    """A writer that goes on with a stored message (a step resumed after an answer)."""
    writer = MessageWriter(message.session_id, message.info, message.subagent_id, message.turn_id)
    writer.info = message.info
    return writer
