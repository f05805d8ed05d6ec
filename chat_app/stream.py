"""GET /api/v1/chat/sessions/{cid}/events: the session's frames as Server-Sent Events.

An async view whose stream is an async generator on the event loop: it subscribes to the session's group first,
then sends the opening frames (replay or snapshot, see events.py), then live frames in id order, fetching any gap from
the event log, with a comment line as heartbeat. Django would still keep a thread per open stream (its per-request
thread context lives until the response ends); viewer_gateway/asgi.py serves this route without that context, so an
open stream holds no thread. Each client address may hold maxStreamsPerClient streams open in one gateway process.
Headers keep reverse proxies from buffering the stream."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections import Counter
from functools import partial

from channels.layers import get_channel_layer
from django.conf import settings
from django.http import StreamingHttpResponse

from api.principal import Principal
from chat_app import events
from chat_app.access import stream_still_allowed
from chat_app.models import SESSION_ID_PATTERN
from chat_app.selectors import visible_sessions
from chat_app.threads import in_thread
from core.errors import NOT_FOUND, TOO_MANY_REQUESTS
from api.envelope import error_response

RETRY_MILLISECONDS = 2000
SESSION_ID_RE = re.compile(rf"^{SESSION_ID_PATTERN}$")


def _session_exists(session_id: str) -> bool:
    return bool(SESSION_ID_RE.match(session_id)) and visible_sessions().filter(pk=session_id).exists()


async def _frames(session_id: str, last_event_id: str | None, heartbeat_seconds: float, still_allowed):
    """`still_allowed`: an async check, asked at least once per heartbeat interval; the stream ends when it fails
    (a token or share link revoked, the member removed, the user signed out)."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    group = events.group_name(session_id)
    await layer.group_add(group, channel)
    try:
        yield f"retry: {RETRY_MILLISECONDS}\n\n"
        opening, delivered = await in_thread(events.opening_frames)(session_id, last_event_id)
        for frame in opening:
            yield frame.as_sse()
        checked_at = time.monotonic()
        while True:
            if time.monotonic() - checked_at >= heartbeat_seconds:
                if not await still_allowed():
                    return
                checked_at = time.monotonic()
            try:
                message = await asyncio.wait_for(layer.receive(channel), timeout=heartbeat_seconds)
            except asyncio.TimeoutError:
                yield ": ping\n\n"
                continue
            seq = message["seq"]
            if seq <= delivered:
                continue
            if seq > delivered + 1:  # frames from another process overtook this one, or the layer dropped some
                missed = await in_thread(events.frames_after)(session_id, delivered, seq - 1)
                for frame in missed:
                    yield frame.as_sse()
            yield events.Frame(seq, message["event"], message["data"]).as_sse()
            delivered = seq
    finally:
        await layer.group_discard(group, channel)


class OpenStreams:
    """How many event streams each client address holds open in this process."""

    def __init__(self):
        self._by_client: Counter[str] = Counter()
        self._lock = threading.Lock()  # released from the thread that closes the response

    def take(self, client: str, cap: int) -> bool:
        with self._lock:
            if self._by_client[client] >= cap:
                return False
            self._by_client[client] += 1
            return True

    def give_back(self, client: str) -> None:
        with self._lock:
            self._by_client[client] -= 1
            if self._by_client[client] <= 0:
                del self._by_client[client]


open_streams = OpenStreams()


class CountedStream:
    """The frames of one stream, holding its client's place in open_streams until Django closes the response
    (it calls close() whether the stream ended, failed or the client went away)."""

    def __init__(self, frames, client: str):
        self._frames = frames
        self._client = client
        self._held = True

    def __aiter__(self):
        return self._frames

    def close(self) -> None:
        if self._held:
            self._held = False
            open_streams.give_back(self._client)


async def session_events(request, cid: str):
    if request.method != "GET":
        return error_response(40001, f"method {request.method} not allowed; use GET")
    if not await in_thread(_session_exists)(cid):
        return error_response(NOT_FOUND, f"chat session {cid} not found")
    client = request.META.get("REMOTE_ADDR", "")
    cap = settings.VIEWER.maxStreamsPerClient
    if not open_streams.take(client, cap):
        return error_response(
            TOO_MANY_REQUESTS, f"this address already holds {cap} event streams open (maxStreamsPerClient); close one first"
        )
    principal, session_key = Principal.of(request), request.session.session_key
    still_allowed = in_thread(partial(stream_still_allowed, principal, session_key, cid))
    frames = _frames(cid, request.headers.get("Last-Event-ID"), settings.CHAT_HEARTBEAT_SECONDS, still_allowed)
    response = StreamingHttpResponse(CountedStream(frames, client), content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache, no-transform"
    response["X-Accel-Buffering"] = "no"
    return response
