"""A server of serving/http_server.py whose application shows whether a request's context variable reaches the next
request of the same connection (tests/gateway/test_http_server_contexts.py):

    python -m tests.gateway.context_leak_server PORT

POST /set sets the variable, then reads its body (a large one makes uvicorn pause reading and resume it from the
request's task); GET /get answers with the variable's value as this request sees it ("unset" when it is not set)."""

from __future__ import annotations

import sys
from contextvars import ContextVar

from serving.http_server import raw_response, serve

request_mark: ContextVar[str] = ContextVar("request_mark")


async def app(scope, receive, send):
    if scope["path"] == "/set":
        request_mark.set("set by an earlier request")
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
    body = request_mark.get("unset").encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def refusal(limit: int, headers: dict[str, str], what: str) -> bytes:
    return raw_response("413 Content Too Large", {"Content-Type": "text/plain"}, f"{what} over {limit} bytes".encode())


if __name__ == "__main__":
    serve("tests.gateway.context_leak_server:app", host="127.0.0.1", port=int(sys.argv[1]),
          body_limit=lambda method, path: 64 * 1024 * 1024, refusal=refusal)
