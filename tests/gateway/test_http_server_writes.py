"""The HTTP server's answers leave in one send each (serving/http_server.py, CoalescedWrites): uvicorn's protocol
writes an answer's head and body separately, which cost the gateway and the edit service a system call and a TCP
segment more for every small answer. Driven here through uvicorn's real protocol on a recording transport."""

import asyncio

from serving.http_server import COALESCED_MAX_BYTES, CoalescedWrites
from tests.gateway.uvicorn_protocol import BODY, RecordingTransport, checked_protocol, small_answer

async def streamed_answer(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    for part in (b"one", b"two"):
        await send({"type": "http.response.body", "body": part, "more_body": True})
        await asyncio.sleep(0)  # a streamed body's parts come one per turn of the loop (Django reads a file on a thread)
    await send({"type": "http.response.body", "body": b""})


LARGE_PART = b"x" * (COALESCED_MAX_BYTES // 2 + 1)


async def large_answer(scope, receive, send):
    """A file's parts one after another without a turn of the loop between them (Django's FileResponse under ASGI)."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(4 * len(LARGE_PART)).encode())]})
    for index in range(4):
        await send({"type": "http.response.body", "body": LARGE_PART, "more_body": index < 3})


def served(app, request: bytes) -> RecordingTransport:
    """The transport's writes after `request` was served by the server's protocol."""

    async def run():
        protocol = checked_protocol(app)
        transport = RecordingTransport()
        protocol.connection_made(transport)
        protocol.data_received(request)
        for _ in range(50):
            await asyncio.sleep(0)
        protocol.connection_lost(None)
        return transport

    return asyncio.run(run())


def test_a_small_answer_is_one_write_of_head_and_body():
    transport = served(small_answer, b"GET /api/v1/health HTTP/1.1\r\nHost: gateway\r\n\r\n")
    assert len(transport.writes) == 1, transport.writes
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert transport.writes[0].endswith(b"\r\n\r\n" + BODY)


def test_a_streamed_answer_goes_out_part_by_part():
    transport = served(streamed_answer, b"GET /file HTTP/1.1\r\nHost: gateway\r\n\r\n")
    joined = b"".join(transport.writes)
    assert joined.endswith(b"3\r\none\r\n3\r\ntwo\r\n0\r\n\r\n")
    assert len(transport.writes) == 3  # the head with the first part, then one write per turn of the loop


def test_a_large_answer_is_not_held_back():
    """Its parts reach the transport as they are sent (its flow control pauses the sender as before), none gathered
    into one copy of the whole answer."""
    transport = served(large_answer, b"GET /v1/models/m/model.xkt HTTP/1.1\r\nHost: gateway\r\n\r\n")
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n") and transport.writes[0].endswith(b"\r\n\r\n" + LARGE_PART)
    assert transport.writes[1:] == [LARGE_PART] * 3
    assert max(map(len, transport.writes)) <= COALESCED_MAX_BYTES


def test_closing_sends_what_is_pending_first_and_aborting_drops_it():
    async def run():
        loop = asyncio.get_running_loop()
        closing, aborting = RecordingTransport(), RecordingTransport()
        for transport in (closing, aborting):
            coalesced = CoalescedWrites(transport, loop)
            coalesced.write(b"head")
            coalesced.write(b"body")
            coalesced.close() if transport is closing else coalesced.abort()
        await asyncio.sleep(0)
        return closing, aborting

    closing, aborting = asyncio.run(run())
    assert closing.writes == [b"headbody"] and closing.closed
    assert aborting.writes == [] and aborting.aborted
