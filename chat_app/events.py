"""The session event stream: every frame is recorded in the session's event log with the next id, then fanned out
through the channel layer (in-memory in one process, Redis across processes) to the open SSE streams.

A stream resumed with Last-Event-ID inside the last REPLAY_FRAMES frames gets exactly the missed frames; an older
(or unknown) id gets a snapshot instead: the messages of the last turn as they stand, the status and the pending
questions, all carrying the current head id. A fresh stream gets the status and the pending questions."""

from __future__ import annotations

import json
import logging
import re
from contextvars import ContextVar
from dataclasses import dataclass

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from chat_app import frames
from chat_app.models import ChatSession, Message, PendingQuestion, SessionEvent
from chat_app.threads import in_thread
from api.host_paths import neutral_paths

logger = logging.getLogger(__name__)

REPLAY_FRAMES = 64
LAST_EVENT_ID_RE = re.compile(r"^[0-9]{1,18}$")
KEPT_FRAMES = 512  # older frames are pruned at the end of a turn; replay never reaches them


# The sub-agent whose tool is running in this context (copied into the threads its service calls run in), so a frame
# raised on its behalf by code that does not know about sub-agents (a project event) carries its subagentId.
frame_origin: ContextVar[str] = ContextVar("frame_origin", default="")


def group_name(session_id: str) -> str:
    return f"chat-events-{session_id}"


@dataclass(frozen=True)
class Frame:
    seq: int
    event: str
    data: dict

    def as_sse(self) -> str:
        data = neutral_paths(json.dumps(self.data, ensure_ascii=False, separators=(",", ":")))  # tool errors may name host files
        return f"id: {self.seq}\nevent: {self.event}\ndata: {data}\n\n"

    def as_message(self) -> dict:
        return {"type": "chat.frame", "seq": self.seq, "event": self.event, "data": self.data}


def record(session_id: str, event: str, data: dict) -> Frame:
    """Appends one frame to the session's event log; the id comes from the session row, so it is strictly
    increasing across every process writing to the session."""
    with transaction.atomic():
        ChatSession.objects.filter(pk=session_id).update(last_seq=F("last_seq") + 1)
        seq = ChatSession.objects.values_list("last_seq", flat=True).get(pk=session_id)
        SessionEvent.objects.create(session_id=session_id, seq=seq, event=event, data=data)
    return Frame(seq, event, data)


_record_in_thread = in_thread(record)


async def apublish(session_id: str, event: str, data: dict) -> Frame:
    frame = await _record_in_thread(session_id, event, data)
    await get_channel_layer().group_send(group_name(session_id), frame.as_message())
    return frame


def publish(session_id: str, event: str, data: dict) -> Frame:
    """publish() for synchronous callers (REST views, services)."""
    frame = record(session_id, event, data)
    async_to_sync(get_channel_layer().group_send)(group_name(session_id), frame.as_message())
    return frame


def _notify_failed(session_id: str, event: str, data: dict, exc: Exception) -> frames.Frame:
    logger.error("the %s frame of session %s could not be delivered: %s", event, session_id, exc)
    return frames.viewer_notify_failed(session_id, event, data, f"{type(exc).__name__}: {exc}"[:500])


async def apublish_for_viewer(session_id: str, event: str, data: dict) -> None:
    """A frame the viewer acts on (viewer.staged, viewer.committed, model.created). When it cannot be delivered (the
    channel layer failed), viewer.notify_failed says so; it is in the event log either way, where a stream that
    catches up finds both."""
    try:
        await apublish(session_id, event, data)
    except Exception as exc:  # noqa: BLE001 - the viewer must hear that it missed something
        try:
            await apublish(session_id, *_notify_failed(session_id, event, data, exc))
        except Exception:  # noqa: BLE001
            logger.exception("viewer.notify_failed of session %s could not be delivered either", session_id)


def publish_for_viewer(session_id: str, event: str, data: dict) -> None:
    """apublish_for_viewer() for synchronous callers."""
    try:
        publish(session_id, event, data)
    except Exception as exc:  # noqa: BLE001
        try:
            publish(session_id, *_notify_failed(session_id, event, data, exc))
        except Exception:  # noqa: BLE001
            logger.exception("viewer.notify_failed of session %s could not be delivered either", session_id)


def frames_after(session_id: str, after: int, up_to: int | None = None) -> list[Frame]:
    rows = SessionEvent.objects.filter(session_id=session_id, seq__gt=after)
    if up_to is not None:
        rows = rows.filter(seq__lte=up_to)
    return [Frame(seq, event, data) for seq, event, data in rows.order_by("seq").values_list("seq", "event", "data")]


def prune(session_id: str) -> None:
    head = ChatSession.objects.values_list("last_seq", flat=True).get(pk=session_id)
    SessionEvent.objects.filter(session_id=session_id, seq__lte=head - KEPT_FRAMES).delete()


def _status_frame(session: ChatSession, seq: int) -> Frame:
    return Frame(seq, *frames.session_status(session.id, session.status))


def _pending_question_frames(session: ChatSession, seq: int) -> list[Frame]:
    return [Frame(seq, frames.QUESTION_ASK, question.frame) for question in session.questions.filter(state=PendingQuestion.State.PENDING)]


def _last_turn_messages(session: ChatSession) -> list[Message]:
    """The messages of the current (or last) turn, sub-agents' included."""
    turn = session.turns.exclude(user_message_id="").order_by("-id").first()
    if turn is not None:
        return list(turn.messages.order_by("id"))
    last_user = session.messages.filter(role=Message.Role.USER, subagent_id="").order_by("-id").first()  # before turns were recorded
    return list(session.messages.filter(id__gte=last_user.id) if last_user else session.messages.all())


def replay_start(last_event_id: str | None) -> int | None:
    """The id a stream resumes after: a sane non-negative integer (at most 18 digits) from Last-Event-ID; None for
    anything else (missing, negative, too long, not a number), which gets the snapshot."""
    if last_event_id is None:
        return None
    text = last_event_id.strip()
    return int(text) if LAST_EVENT_ID_RE.match(text) else None


def opening_frames(session_id: str, last_event_id: str | None) -> tuple[list[Frame], int]:
    """What a stream sends before going live, and the id it has then delivered up to."""
    session = ChatSession.objects.get(pk=session_id)
    head = session.last_seq
    after = replay_start(last_event_id)
    if after is not None and head - REPLAY_FRAMES <= after <= head:
        return frames_after(session_id, after, head), head
    if last_event_id is None:
        return [_status_frame(session, head), *_pending_question_frames(session, head)], head
    snapshot = [
        Frame(head, *frames.message(session.id, message.info, [p.data for p in message.parts.all()], resync=True, subagent_id=message.subagent_id))
        for message in _last_turn_messages(session)
    ]
    return [*snapshot, _status_frame(session, head), *_pending_question_frames(session, head)], head
