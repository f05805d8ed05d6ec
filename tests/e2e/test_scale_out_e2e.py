"""The gateway across processes (docs/operations/scaling-out.md): two gateway processes on one PostgreSQL database
and one Redis channel layer, 50 event-stream clients split across them on one chat session while a turn streams; every
client gets every frame in order, a client that reconnects to the other process with Last-Event-ID misses
nothing, and conversions spread over worker processes."""

from __future__ import annotations

import time

import psycopg
import pytest

from tests.e2e.scale_out import start_scale_out, temporary_database
from tests.fake_openai import Reply
from tests.helpers import sample
from tests.sse import SSEStream

pytestmark = pytest.mark.e2e

CLIENTS = 50
PIECES = 120
REDIS_QUIET_SECONDS = 7


@pytest.fixture(scope="module")
def scaled(tmp_path_factory, fake):
    with temporary_database() as dsn:
        stack, urls = start_scale_out(tmp_path_factory.mktemp("scale"), dsn, config={"llmAPIKey": "k", "llmBaseURL": fake.url, "llmModel": "fake"})
        stack.pg_dsn = dsn
        try:
            yield stack, urls
        finally:
            stack.stop()


def a_streaming_reply() -> Reply:
    reply = Reply()
    for index in range(PIECES):
        reply.text(f"piece {index} ", pieces=1).pause(0.03)  # ~3.6 s: ~70 frames at one per 50 ms
    return reply


def turn_ids(stream: SSEStream, first_id: int) -> list[int]:
    """The ids the stream received from `first_id` on, up to the turn's session.idle."""
    ids = []
    for frame in stream.frames:
        if frame.id is not None and frame.id >= first_id:
            ids.append(frame.id)
            if frame.event == "session.idle":
                break
    return ids


def test_fifty_clients_on_two_gateways_get_every_frame_in_order(scaled, fake):
    stack, (first, second) = scaled
    project = stack.session.post(f"{first}/api/v1/chat/projects", json={"kind": "cad"}, timeout=60).json()["data"]
    cid = stack.session.post(f"{second}/api/v1/chat/sessions", json={"projectId": project["projectId"]}, timeout=60).json()["data"]["chatSessionId"]
    streams = [SSEStream(f"{(first, second)[index % 2]}/api/v1/chat/sessions/{cid}/events").start() for index in range(CLIENTS)]
    mover = SSEStream(f"{first}/api/v1/chat/sessions/{cid}/events").start()
    try:
        for stream in [*streams, mover]:
            stream.wait_event("session.status")
        # quiet for longer than a Redis client's read timeout (redis-py: 5 s) while every stream waits on the layer
        time.sleep(REDIS_QUIET_SECONDS)
        fake.script(a_streaming_reply())
        assert stack.session.post(f"{first}/api/v1/chat/sessions/{cid}/messages", json={"text": "stream"}, timeout=60).json()["data"] == {"accepted": True}

        busy = mover.wait_for(lambda f: f.event == "session.status" and f.data.get("status") == "busy", timeout=60)
        # the mover leaves gateway 1 mid-turn and comes back on gateway 2 with the last id it saw
        mover.wait_for(lambda f: f.event == "message.part.delta" and (f.id or 0) > busy.id + 20, timeout=60)
        mover.close()
        seen = [f.id for f in mover.frames if f.id is not None and f.id >= busy.id]
        resumed = SSEStream(f"{second}/api/v1/chat/sessions/{cid}/events", last_event_id=seen[-1]).start()

        for stream in [*streams, resumed]:
            stream.wait_event("session.idle", timeout=120)
        reference = turn_ids(streams[0], busy.id)
        # deltas are coalesced by time, so how many frames a turn makes depends on the machine's speed: what matters
        # is that the mover left (20 frames in) before the turn's end, so that its reconnection is tested mid-turn
        assert seen[-1] < reference[-1], "the mover left after the turn had ended"
        assert reference == list(range(busy.id, busy.id + len(reference))), "ids of one turn are consecutive"
        for index, stream in enumerate(streams):
            assert turn_ids(stream, busy.id) == reference, f"client {index} on gateway {index % 2 + 1}"
            assert [f.id for f in stream.frames if f.id is not None] == sorted({f.id for f in stream.frames if f.id is not None})
        assert seen + turn_ids(resumed, seen[-1] + 1) == reference, "the reconnected client missed or repeated frames"
        resumed.close()
    finally:
        for stream in streams:
            stream.close()


def test_conversions_spread_over_worker_processes(scaled):
    stack, (first, second) = scaled
    ids = []
    for url in (first, second):
        with open(sample("duplex.ifc"), "rb") as handle:
            ids.append(stack.session.post(f"{url}/api/v1/models", files={"file": ("duplex.ifc", handle)}, timeout=120).json()["data"]["id"])
    workers_seen: dict[str, set[str]] = {model_id: set() for model_id in ids}
    deadline = time.monotonic() + 300
    with psycopg.connect(stack.pg_dsn, autocommit=True) as database:
        while time.monotonic() < deadline:
            rows = database.execute("SELECT id, status, job_worker FROM models_app_ifcmodel WHERE id = ANY(%s)", (ids,)).fetchall()
            for model_id, _, worker in rows:
                if worker:
                    workers_seen[model_id].add(worker)
            if all(status == "ready" for _, status, _ in rows):
                break
            time.sleep(0.02)
    assert all(status == "ready" for _, status, _ in rows), rows
    assert len(set().union(*workers_seen.values())) == 2, workers_seen
