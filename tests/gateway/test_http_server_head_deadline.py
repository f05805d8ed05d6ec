"""A request's line and headers must arrive within the server's head deadline (serving/http_server.py): uvicorn
set none, so a client that connected and sent nothing, or trickled its head (slowloris), held a connection of the
gateway or the edit service for ever. Driven through uvicorn's real protocol on a recording transport."""

import asyncio

import uvicorn
from uvicorn.server import ServerState

from serving.http_server import HEAD_TIMEOUT_ANSWER, CheckedHttpProtocol, RequestChecks
from tests.gateway.test_http_server_writes import BODY, RecordingTransport, small_answer

DEADLINE = 0.2
REQUEST = b"GET / HTTP/1.1\r\nHost: testserver\r\n\r\n"


def conversation(*steps) -> RecordingTransport:
    """Serves `small_answer` on a protocol with a DEADLINE-second head deadline through `steps`: bytes are received,
    a number is that many seconds waited. Then the client goes (`closed_by_server`: whether the server had closed it)."""

    async def run():
        config = uvicorn.Config(small_answer, ws="none", lifespan="off", log_config=None, access_log=False)
        config.load()
        checks = RequestChecks(body_limit=lambda method, path: 1024, refusal=lambda *args: b"")
        protocol = type("Checked", (CheckedHttpProtocol,), {"checks": checks, "head_timeout": DEADLINE})(
            config=config, server_state=ServerState(), app_state={})
        transport = RecordingTransport()
        protocol.connection_made(transport)
        for step in steps:
            if isinstance(step, bytes):
                protocol.data_received(step)
            else:
                await asyncio.sleep(step)
        for _ in range(20):
            await asyncio.sleep(0)
        transport.closed_by_server = transport.closed
        protocol.connection_lost(None)
        return transport

    return asyncio.run(run())


def answers(transport: RecordingTransport) -> bytes:
    return b"".join(transport.writes)


def test_a_connection_that_sends_nothing_is_closed_without_an_answer_at_the_deadline():
    """As uvicorn closes an idle kept-alive connection: a browser's preconnected socket gets no 408 to misread."""
    transport = conversation(DEADLINE * 2)
    assert answers(transport) == b""
    assert transport.closed_by_server


def test_a_head_begun_and_not_finished_is_answered_408_and_closed_at_the_deadline():
    transport = conversation(b"GET / HTTP/1.1\r\nHost: testse", DEADLINE * 2)
    assert answers(transport) == HEAD_TIMEOUT_ANSWER
    assert answers(transport).startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert transport.closed_by_server


def test_a_head_trickled_past_the_deadline_is_answered_408_and_what_follows_is_not_served():
    trickle = [part for byte in REQUEST[:-2] for part in (bytes([byte]), DEADLINE / 10)]
    transport = conversation(*trickle, b"\r\n", DEADLINE)
    assert answers(transport) == HEAD_TIMEOUT_ANSWER  # the request completed after the deadline got no answer
    assert transport.closed_by_server


def test_a_head_that_arrives_in_time_is_served_and_its_connection_kept_past_the_deadline():
    transport = conversation(REQUEST[:10], DEADLINE / 2, REQUEST[10:], DEADLINE * 2)
    assert answers(transport).startswith(b"HTTP/1.1 200 OK\r\n") and answers(transport).endswith(BODY)
    assert b"408" not in answers(transport)
    assert not transport.closed_by_server  # kept alive: the idle connection is the keep-alive time-out's


def test_on_a_kept_alive_connection_the_deadline_counts_from_the_next_request_s_first_byte():
    idle_then_slow = conversation(REQUEST, DEADLINE * 2, REQUEST[:10], DEADLINE * 2)
    assert answers(idle_then_slow).count(b"HTTP/1.1 200 OK") == 1
    assert answers(idle_then_slow).endswith(HEAD_TIMEOUT_ANSWER) and idle_then_slow.closed_by_server

    idle_then_whole = conversation(REQUEST, DEADLINE * 2, REQUEST, DEADLINE)
    assert answers(idle_then_whole).count(b"HTTP/1.1 200 OK") == 2 and not idle_then_whole.closed_by_server
