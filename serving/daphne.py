"""Daphne with a request-body limit per route.

Daphne (Twisted) buffers a whole request body, into a temporary file when it is large, before the ASGI application
sees the request, so a limit checked in Django saves neither bandwidth nor disk. This request class decides from
the request line and Content-Length, and again while a body without a length streams in, and answers the refusal
itself before buffering anything.
"""

from __future__ import annotations

from typing import Callable

from daphne import http_protocol
from daphne.cli import CommandLineInterface

# (method, path) -> the largest body accepted, in bytes
BodyLimit = Callable[[str, str], int]
# (limit in bytes, request headers) -> a complete raw HTTP response refusing the body
Refusal = Callable[[int, dict[str, str]], bytes]


def raw_response(status: str, headers: dict[str, str], body: bytes) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{name}: {value}" for name, value in headers.items()),
             f"Content-Length: {len(body)}", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1") + body


class BodyLimitedRequest(http_protocol.WebRequest):
    body_limit: BodyLimit
    refusal: Refusal

    def gotLength(self, length):
        method = self.channel._command.decode("latin-1").upper()
        path = self.channel._path.decode("latin-1").split("?", 1)[0]
        self._body_limit = type(self).body_limit(method, path)
        self._body_received = 0
        self._refused = False
        if length is not None and length > self._body_limit:
            self._refuse()
            length = 0
        super().gotLength(length)

    def handleContentChunk(self, data):
        if self._refused:
            return
        self._body_received += len(data)
        if self._body_received > self._body_limit:
            self._refuse()
            return
        super().handleContentChunk(data)

    def requestReceived(self, command, path, version):
        if not self._refused:
            super().requestReceived(command, path, version)

    def _refuse(self) -> None:
        self._refused = True
        headers = {k.decode("latin-1").lower(): v[0].decode("latin-1") for k, v in self.requestHeaders.getAllRawHeaders()}
        self.channel.transport.write(type(self).refusal(self._body_limit, headers))
        self.channel.transport.loseConnection()


def serve(argv: list[str], *, body_limit: BodyLimit, refusal: Refusal) -> None:
    """Runs Daphne's command line (argv as for `daphne`) with the body limit in place."""
    BodyLimitedRequest.body_limit = staticmethod(body_limit)
    BodyLimitedRequest.refusal = staticmethod(refusal)
    # Daphne's HTTPFactory instantiates the module's WebRequest for every request; it offers no other hook.
    http_protocol.WebRequest = BodyLimitedRequest
    CommandLineInterface().run(argv)
