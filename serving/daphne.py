"""Daphne with decisions taken from the request line and headers, before any body byte is buffered.

Daphne (Twisted) buffers a whole request body, into a temporary file when it is large, before the ASGI application
sees the request, so a check made in Django saves neither bandwidth nor disk. This request class asks the service,
once the headers are in, whether to refuse the request outright (`HeaderCheck`: a missing token, say) and how large
a body the route accepts (`BodyLimit`), checked against Content-Length and again while a body without a length
streams in; a refusal is answered by the server itself without handing the body to anyone.

A refused connection is closed the way nginx's lingering close does it: the answer is sent and the write side shut,
then whatever the client still sends is read and dropped for a short while, so a client that is busy uploading
reads the refusal instead of a connection reset (a browser shows "connection reset" otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable
from urllib.parse import unquote

from daphne import http_protocol
from daphne.cli import CommandLineInterface
from twisted.internet import reactor

# how long, and for how many bytes at most, a refused client may go on sending before the connection is cut (a
# client that reads while it sends, as browsers and curl do, stops at the answer; these bound the others)
LINGER_SECONDS = 2.0
LINGER_MAX_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class RequestHead:
    method: str
    path: str  # as Daphne gives it to the application: percent-decoded, without the query string
    headers: dict[str, str]  # lowercase names; a repeated header keeps its first value
    peer_host: str
    scheme: str


# the request -> a complete raw HTTP response refusing it, or None to go on
HeaderCheck = Callable[[RequestHead], bytes | None]
# (method, path) -> the largest body accepted, in bytes
BodyLimit = Callable[[str, str], int]
# (limit in bytes, request headers) -> a complete raw HTTP response refusing the body
Refusal = Callable[[int, dict[str, str]], bytes]


def raw_response(status: str, headers: dict[str, str], body: bytes) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{name}: {value}" for name, value in headers.items()),
             f"Content-Length: {len(body)}", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1") + body


def _no_header_check(head: RequestHead) -> None:
    return None


class CheckedRequest(http_protocol.WebRequest):
    header_check: HeaderCheck = staticmethod(_no_header_check)
    body_limit: BodyLimit
    refusal: Refusal

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Twisted would parse every POST form body into memory (a 200 MB upload read whole) and answer a malformed
        # multipart body with a bare 400 of its own; Daphne never uses those arguments, the application parses.
        self._parsePOSTFormSubmission = False

    def gotLength(self, length):
        self._body_received = 0
        self._refused = False
        head = self._head()
        self._body_limit = type(self).body_limit(head.method, head.path)
        answer = type(self).header_check(head)
        if answer is None and length is not None and length > self._body_limit:
            answer = type(self).refusal(self._body_limit, head.headers)
        if answer is not None:
            self._refuse(answer)
            length = 0
        super().gotLength(length)

    def _head(self) -> RequestHead:
        raw_path = self.channel._path.split(b"?", 1)[0]
        try:
            path = unquote(raw_path.decode("ascii"))
        except UnicodeDecodeError:
            path = "/"  # Daphne answers such a path 400 itself
        headers: dict[str, str] = {}
        for name, values in self.requestHeaders.getAllRawHeaders():
            headers.setdefault(name.decode("latin-1").lower(), values[0].decode("latin-1"))
        peer = self.channel.transport.getPeer()
        return RequestHead(
            method=self.channel._command.decode("latin-1").upper(),
            path=path,
            headers=headers,
            peer_host=str(getattr(peer, "host", "")),
            scheme="https" if self.isSecure() else "http",
        )

    def handleContentChunk(self, data):
        if self._refused:
            return
        self._body_received += len(data)
        if self._body_received > self._body_limit:
            self._refuse(type(self).refusal(self._body_limit, self._head().headers))
            return
        super().handleContentChunk(data)

    def requestReceived(self, command, path, version):
        if not self._refused:
            super().requestReceived(command, path, version)

    def _refuse(self, answer: bytes) -> None:
        self._refused = True
        transport = self.channel.transport
        transport.write(answer)
        transport.loseWriteConnection()
        _drop_further_input(self.channel, transport)


def _drop_further_input(channel, transport) -> None:
    """Reads and drops what the client still sends (no further request on this connection is parsed), then cuts the
    connection after LINGER_SECONDS or LINGER_MAX_BYTES, whichever comes first."""
    dropped = 0
    cut = reactor.callLater(LINGER_SECONDS, transport.abortConnection)

    def drop(data: bytes) -> None:
        nonlocal dropped
        dropped += len(data)
        if dropped > LINGER_MAX_BYTES and cut.active():
            cut.cancel()
            transport.abortConnection()

    def lost(reason, original=channel.connectionLost) -> None:
        if cut.active():
            cut.cancel()
        original(reason)

    channel.dataReceived = drop
    channel.connectionLost = lost


def serve(argv: list[str], *, body_limit: BodyLimit, refusal: Refusal, header_check: HeaderCheck | None = None) -> None:
    """Runs Daphne's command line (argv as for `daphne`) with the checks in place."""
    CheckedRequest.body_limit = staticmethod(body_limit)
    CheckedRequest.refusal = staticmethod(refusal)
    if header_check is not None:
        CheckedRequest.header_check = staticmethod(header_check)
    # Daphne's HTTPFactory instantiates the module's WebRequest for every request; it offers no other hook.
    http_protocol.WebRequest = CheckedRequest
    CommandLineInterface().run(argv)
