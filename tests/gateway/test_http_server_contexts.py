"""A request's context variables stay its own: the next request on the same kept-alive connection, or one pipelined
behind it, starts without them (a real server process of serving/http_server.py, tests/gateway/context_leak_server.py).

uvicorn resumes reading a connection from the request's task (its receive(), the end of its answer); asyncio then
registers the connection's read callback with a copy of that task's context, in which the next request's task was
created (cpython issue 140947). In the gateway the variable was asgiref's ThreadSensitiveContext of an ended request,
and a chat event stream that followed other requests on its connection failed with 500 ("ThreadSensitiveContext has
exited")."""

import socket
import sys

import httptools
import pytest

from tests.e2e.stack import ROOT, free_port
from tests.helpers import poll
from tests.processes import spawn, stop

LARGE_BODY = b"x" * (4 * 1024 * 1024)  # well over uvicorn's 64 KB high-water mark: reading pauses, then resumes


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def server():
    port = free_port()
    process = spawn([sys.executable, "-m", "tests.gateway.context_leak_server", str(port)], cwd=ROOT)
    try:
        poll(lambda: listening(port) or process.poll() is not None, bool, timeout=30)
        assert process.poll() is None, "the server did not start"
        yield port
    finally:
        stop(process)


def request(method: str, path: str, body: bytes = b"") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


class Answers:
    """The bodies of the answers on one connection, read with httptools' parser (the server's own). (http.client's
    reader closes its file after each answer's body: no second answer from the same connection.)"""

    def __init__(self, connection: socket.socket):
        self.connection = connection
        self.parser = httptools.HttpResponseParser(self)
        self.bodies: list[bytes] = []
        self.body = b""

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        self.bodies.append(self.body)
        self.body = b""

    def next(self, count: int) -> list[bytes]:
        """The next `count` answers' bodies."""
        while len(self.bodies) < count:
            chunk = self.connection.recv(65536)
            assert chunk, f"the connection closed after {len(self.bodies)} answers"
            self.parser.feed_data(chunk)
        taken, self.bodies = self.bodies[:count], self.bodies[count:]
        return taken


def test_the_next_request_on_a_kept_alive_connection_starts_without_the_last_ones_variables(server):
    with socket.create_connection(("127.0.0.1", server), timeout=30) as connection:
        answers = Answers(connection)
        connection.sendall(request("POST", "/set", LARGE_BODY))
        assert answers.next(1) == [b"set by an earlier request"]
        connection.sendall(request("GET", "/get"))
        assert answers.next(1) == [b"unset"]


def test_a_pipelined_request_starts_without_the_variables_of_the_one_before(server):
    with socket.create_connection(("127.0.0.1", server), timeout=30) as connection:
        connection.sendall(request("POST", "/set", LARGE_BODY) + request("GET", "/get"))
        assert Answers(connection).next(2) == [b"set by an earlier request", b"unset"]
