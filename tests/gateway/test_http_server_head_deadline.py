"""A request's line and headers must arrive within the server's head deadline (serving/http_server.py): uvicorn
set none, so a client that connected and sent nothing, or trickled its head (slowloris), held a connection of the
gateway or the edit service for ever. Driven through uvicorn's real protocol on a recording transport."""

import asyncio

import pytest

from serving import http_server
from serving.http_server import head_timeout_answer
from tests.gateway.uvicorn_protocol import BODY, RecordingTransport, checked_protocol, small_answer

DEADLINE = 0.2
HEAD_TIMEOUT_ANSWER = head_timeout_answer(DEADLINE)  # names the deadline the protocol was given
REQUEST = b"GET / HTTP/1.1\r\nHost: testserver\r\n\r\n"


@pytest.fixture(autouse=True)
def short_linger(monkeypatch):
    monkeypatch.setattr(http_server, "LINGER_SECONDS", DEADLINE / 2)


async def slow_answer(scope, receive, send):
    await asyncio.sleep(DEADLINE * 3)
    await small_answer(scope, receive, send)


class ShuttingTransport(RecordingTransport):
    """Records a shut write side too (the lingering close of a refusal shuts it first)."""

    def __init__(self):
        super().__init__()
        self.eof = False

    def can_write_eof(self):
        return True

    def write_eof(self):
        self.eof = True


def conversation(*steps, app=small_answer) -> ShuttingTransport:
    """Serves `app` on a protocol with a DEADLINE-second head deadline through `steps`: bytes are received, a number
    is that many seconds waited. Then the client goes (`ended_by_server`: whether the server had closed or cut it)."""

    async def run():
        protocol = checked_protocol(app, head_timeout=DEADLINE)
        transport = ShuttingTransport()
        protocol.connection_made(transport)
        for step in steps:
            if isinstance(step, bytes):
                protocol.data_received(step)
            else:
                await asyncio.sleep(step)
        for _ in range(20):
            await asyncio.sleep(0)
        transport.ended_by_server = transport.closed or transport.aborted
        protocol.connection_lost(None)
        return transport

    return asyncio.run(run())


def answers(transport: RecordingTransport) -> bytes:
    return b"".join(transport.writes)


def test_a_connection_that_sends_nothing_is_cut_without_an_answer_at_the_deadline():
    """As uvicorn closes an idle kept-alive connection: a browser's preconnected socket gets no 408 to misread."""
    transport = conversation(DEADLINE * 2)
    assert answers(transport) == b""
    assert transport.ended_by_server


def test_a_head_begun_and_not_finished_is_answered_408_with_a_lingering_close():
    transport = conversation(b"GET / HTTP/1.1\r\nHost: testse", DEADLINE * 2)
    assert answers(transport) == HEAD_TIMEOUT_ANSWER
    assert answers(transport).startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert transport.eof and transport.aborted  # the write side shut first, the connection cut after the linger


def test_a_head_trickled_past_the_deadline_is_answered_408_and_what_follows_is_not_served():
    trickle = [part for byte in REQUEST[:-2] for part in (bytes([byte]), DEADLINE / 10)]
    transport = conversation(*trickle, b"\r\n", DEADLINE)
    assert answers(transport) == HEAD_TIMEOUT_ANSWER  # the request completed after the deadline got no answer
    assert transport.ended_by_server


def test_a_head_that_arrives_in_time_is_served_and_its_connection_kept_past_the_deadline():
    transport = conversation(REQUEST[:10], DEADLINE / 2, REQUEST[10:], DEADLINE * 2)
    assert answers(transport).startswith(b"HTTP/1.1 200 OK\r\n") and answers(transport).endswith(BODY)
    assert b"408" not in answers(transport)
    assert not transport.ended_by_server  # kept alive: the idle connection is the keep-alive time-out's


def test_on_a_kept_alive_connection_the_deadline_counts_from_the_next_request_s_first_byte():
    idle_then_slow = conversation(REQUEST, DEADLINE * 2, REQUEST[:10], DEADLINE * 2)
    assert answers(idle_then_slow).count(b"HTTP/1.1 200 OK") == 1
    assert answers(idle_then_slow).endswith(HEAD_TIMEOUT_ANSWER) and idle_then_slow.ended_by_server

    idle_then_whole = conversation(REQUEST, DEADLINE * 2, REQUEST, DEADLINE)
    assert answers(idle_then_whole).count(b"HTTP/1.1 200 OK") == 2 and not idle_then_whole.ended_by_server


def test_line_breaks_between_requests_do_not_hold_a_kept_alive_connection():
    """The parser skips line breaks before a request without beginning a message; they cancel the keep-alive
    time-out, so without a deadline of their own one "\\r\\n" after each answer held the connection for ever."""
    transport = conversation(REQUEST, DEADLINE / 2, b"\r\n", DEADLINE * 2)  # after the answer
    assert answers(transport).count(b"HTTP/1.1 200 OK") == 1 and b"408" not in answers(transport)
    assert transport.ended_by_server


def test_a_pipelined_head_is_not_cut_while_the_answer_before_it_runs():
    running = conversation(REQUEST + REQUEST[:10], DEADLINE * 2, app=slow_answer)
    assert answers(running) == b"" and not running.ended_by_server  # the first answer takes DEADLINE * 3

    after = conversation(REQUEST + REQUEST[:10], DEADLINE * 6, app=slow_answer)
    assert answers(after).startswith(b"HTTP/1.1 200 OK\r\n") and answers(after).endswith(HEAD_TIMEOUT_ANSWER)
