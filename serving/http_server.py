"""The HTTP server of the gateway and the edit service: uvicorn's httptools protocol, with decisions taken from the
request line and headers before any body byte is read.

Once a request's headers are parsed, and before its application task starts, the service is asked whether to refuse
the request outright (`HeaderCheck`: a missing token, say) and how large a body the route accepts (`BodyLimit`),
checked against Content-Length and again while a body without a length streams in; a refusal is answered by the
server itself and the application never sees the request. A WebSocket upgrade is refused with 403 (neither service
serves one), a request head over HEAD_MAX_BYTES is refused too (httptools alone would collect any number of headers),
and a head not complete within HEAD_TIMEOUT_SECONDS is answered 408 and its connection closed (a connection that sent
nothing of a request by then is cut without an answer). The request's body has no such deadline. Each request's
task starts in a context of its own, never in a copy of the one before it on the connection.

A refused connection is closed the way nginx's lingering close does it: the answer is sent and the write side shut,
then whatever the client still sends is read and dropped for a short while, so a client that is busy uploading
reads the refusal instead of a connection reset (a browser shows "connection reset" otherwise).

    serve("viewer_gateway.asgi:application", host="127.0.0.1", port=8000,
          body_limit=lambda method, path: 1024 * 1024, refusal=refusal, header_check=header_check)
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from typing import Callable
from urllib.parse import unquote

import httptools
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# how long, and for how many bytes at most, a refused client may go on sending before the connection is cut (a
# client that reads while it sends, as browsers and curl do, stops at the answer; these bound the others)
LINGER_SECONDS = 2.0
LINGER_MAX_BYTES = 16 * 1024 * 1024
# the request line and headers together (Twisted, which served these before, allowed 16 KB of headers)
HEAD_MAX_BYTES = 32 * 1024
# an idle kept-alive connection stays open this long (nginx's default): the gateway keeps its connections to the
# edit service open between calls
KEEP_ALIVE_SECONDS = 75
# a client gets this long from its connection (on a kept-alive one: from the first byte after an answer; a pipelined
# head is not cut while the answer before it runs) to send the request line and headers; uvicorn sets no such limit, so a client that connected and sent nothing, or trickled its
# head a byte at a time (slowloris), held a connection for ever (nginx's client_header_timeout: 60 s; Apache's
# mod_reqtimeout: 20-40 s)
HEAD_TIMEOUT_SECONDS = 30.0
# on SIGTERM, requests in flight get this long to finish (an open event stream would otherwise hold the exit)
GRACEFUL_SHUTDOWN_SECONDS = 5


@dataclass(frozen=True)
class RequestHead:
    method: str
    path: str  # as the application sees it: percent-decoded, without the query string
    headers: dict[str, str]  # lowercase names; a repeated header keeps its first value
    peer_host: str
    scheme: str


# the request -> a complete raw HTTP response refusing it, or None to go on
HeaderCheck = Callable[[RequestHead], bytes | None]
# (method, path) -> the largest body accepted, in bytes
BodyLimit = Callable[[str, str], int]
# (limit in bytes, request headers, what exceeds it: "request body" or "request head") -> a complete raw HTTP response
Refusal = Callable[[int, dict[str, str], str], bytes]


def raw_response(status: str, headers: dict[str, str], body: bytes) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{name}: {value}" for name, value in headers.items()),
             f"Content-Length: {len(body)}", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1") + body


def _no_header_check(head: RequestHead) -> None:
    return None


@functools.cache
def head_timeout_answer(seconds: float) -> bytes:
    return raw_response("408 Request Timeout", {"Content-Type": "text/plain"},
                        f"the request line and headers did not arrive within {seconds:g} s".encode())


WEBSOCKET_REFUSAL = raw_response("403 Forbidden", {"Content-Type": "text/plain"}, b"WebSocket connections are not served here")


@dataclass(frozen=True)
class RequestChecks:
    body_limit: BodyLimit
    refusal: Refusal
    header_check: HeaderCheck = _no_header_check


# writes held back for one send at most this large together: what asyncio's transport buffers before it pauses the
# writer (its default high-water mark); a larger write goes through at once, so that a large answer's flow control
# (pause_writing, uvicorn's drain) and memory stay as they were
COALESCED_MAX_BYTES = 64 * 1024


class CoalescedWrites:
    """A transport whose small writes within one turn of the event loop go out in one send: uvicorn writes an
    answer's head and its body separately, two system calls and two TCP segments for every small answer (a kept-alive
    client reads them with two receives). Everything but writing is the transport's own."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop):
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._pending_bytes = 0

    def write(self, data: bytes) -> None:
        if self._pending_bytes + len(data) > COALESCED_MAX_BYTES:
            self.flush()
            self._transport.write(data)
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(data)
        self._pending_bytes += len(data)

    def flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            self._pending_bytes = 0
            self._transport.write(data)

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._pending_bytes = 0
        self._transport.abort()

    def __getattr__(self, name: str):
        return getattr(self._transport, name)


class CheckedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with RequestChecks applied between the headers and the application, a deadline
    for each request's head (HEAD_TIMEOUT_SECONDS), its writes coalesced (CoalescedWrites)."""

    checks: RequestChecks
    head_timeout: float = HEAD_TIMEOUT_SECONDS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._refused = False
        self._linger_cut: asyncio.TimerHandle | None = None
        self._dropped = 0
        self._head_bytes = 0
        self._body_limit = 0
        self._body_received = 0
        self._head_deadline: asyncio.TimerHandle | None = None
        self._head_begun = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescedWrites(transport, self.loop))
        self._await_head()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            self._drop(len(data))
            return
        self._unset_keepalive_if_required()
        if self.cycle is None or self.cycle.response_complete:  # no request in progress: these bytes start the next head
            self._await_head()  # (before the parser: line breaks between requests begin no message)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            pass  # a WebSocket upgrade, refused when its headers were complete
        except httptools.HttpParserError:
            if not self._refused:
                self.send_400_response("Invalid HTTP request received.")

    def on_message_begin(self) -> None:
        self._await_head()
        super().on_message_begin()
        self._head_bytes = 0
        self._head_begun = True

    def on_url(self, url: bytes) -> None:
        if self._counted_head(len(url)):
            super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._counted_head(len(name) + len(value) + 4):
            super().on_header(name, value)

    def _counted_head(self, size: int) -> bool:
        if self._refused:
            return False
        self._head_bytes += size
        if self._head_bytes > HEAD_MAX_BYTES:
            self._refuse(self.checks.refusal(HEAD_MAX_BYTES, self._header_dict(), "request head"))
            return False
        return True

    def on_headers_complete(self) -> None:
        self._head_arrived()
        self._head_begun = False
        if self._refused:
            return
        headers = self._header_dict()
        if "upgrade" in headers.get("connection", "").lower() and headers.get("upgrade", "").lower() == "websocket":
            self._refuse(WEBSOCKET_REFUSAL)
            return
        head = self._head(headers)
        self._body_limit = self.checks.body_limit(head.method, head.path)
        self._body_received = 0
        answer = self.checks.header_check(head)
        if answer is None and _declared_length(headers) > self._body_limit:
            answer = self.checks.refusal(self._body_limit, headers, "request body")
        if answer is not None:
            self._refuse(answer)
            return
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if self._refused:
            return
        self._body_received += len(body)
        if self._body_received > self._body_limit:
            cycle = self.cycle
            if cycle.response_started:
                self.transport.close()  # the application answered without the body: no room for a refusal
            else:
                self._refuse(self.checks.refusal(self._body_limit, self._header_dict(), "request body"))
            cycle.disconnected = True  # the application's next receive() is a disconnect
            cycle.message_event.set()
            return
        super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._refused:
            super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._linger_cut is not None:
            self._linger_cut.cancel()
        self._head_arrived()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        if self._head_deadline is None:
            self._head_deadline = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _head_arrived(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if self._refused or self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:  # a pipelined head: the answer before it runs
            self._await_head()
            return
        if self._head_begun:
            self._refuse(head_timeout_answer(self.head_timeout))  # a lingering close: a client still sending reads the 408, not a reset
        else:  # nothing of a request came (or only line breaks): nothing to answer, nothing to wait for
            self._refused = True
            self.transport.abort()

    def _header_dict(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        for name, value in self.headers or ():
            headers.setdefault(name.decode("latin-1"), value.decode("latin-1"))
        return headers

    def _head(self, headers: dict[str, str]) -> RequestHead:
        try:
            path = unquote(httptools.parse_url(self.url).path.decode("ascii"))
        except (httptools.HttpParserInvalidURLError, UnicodeDecodeError):
            path = "/"  # uvicorn answers such a request 400 itself
        return RequestHead(
            method=self.parser.get_method().decode("latin-1").upper(),
            path=path,
            headers=headers,
            peer_host=self.client[0] if self.client else "",
            scheme=self.scheme or "http",
        )

    def _refuse(self, answer: bytes) -> None:
        """Sends the answer, shuts the write side, then drops what the client still sends (no further request on
        this connection is parsed) and cuts the connection after LINGER_SECONDS or LINGER_MAX_BYTES."""
        self._refused = True
        self._unset_keepalive_if_required()
        transport = self.transport
        transport.write(answer)
        if transport.can_write_eof():
            transport.write_eof()
        self.flow.resume_reading()
        self._linger_cut = self.loop.call_later(LINGER_SECONDS, transport.abort)

    def _drop(self, size: int) -> None:
        self._dropped += size
        if self._dropped > LINGER_MAX_BYTES:
            self.transport.abort()


def _declared_length(headers: dict[str, str]) -> int:
    try:
        return int(headers.get("content-length", "0"))
    except ValueError:
        return 0  # httptools refuses a malformed Content-Length as a bad request


def serve(app: str, *, host: str, port: int, body_limit: BodyLimit, refusal: Refusal, header_check: HeaderCheck | None = None) -> None:
    """Serves the ASGI application named by `app` ("module:attribute") on host:port until SIGTERM or SIGINT."""
    checks = RequestChecks(body_limit=body_limit, refusal=refusal, header_check=header_check or _no_header_check)
    protocol = type("CheckedHttp", (CheckedHttpProtocol,), {"checks": checks})
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol,
        ws="none",
        lifespan="off",
        # no X-Forwarded-* from anyone: viewer_gateway.edge honours forwarded headers from trustedProxies only
        proxy_headers=False,
        server_header=False,
        access_log=True,  # "uvicorn.access" records, one per request, through the service's logging
        log_config=None,  # the service's own logging (Django's LOGGING) applies
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        loop="asyncio",  # uvloop measured no faster here (docs/decisions/0013)
        # each request's task in a context of its own: uvicorn resumes a connection's reading from the request's task,
        # and asyncio's read callback then runs (and starts the next request's task) in a copy of that task's context
        # (cpython issue 140947): a kept-alive connection's next request saw the last one's ThreadSensitiveContext
        reset_contextvars=True,
    )
    uvicorn.Server(config).run()
