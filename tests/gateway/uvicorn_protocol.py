"""uvicorn's protocol as the gateway and the edit service serve with it (serving/http_server.py), driven in-process on
a transport that records what the server writes: for the tests of the server's own behaviour."""

import asyncio

import uvicorn
from uvicorn.server import ServerState

from serving.http_server import CheckedHttpProtocol, RequestChecks

BODY = b'{"code": 0}'


async def small_answer(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]})
    await send({"type": "http.response.body", "body": BODY})


class RecordingTransport(asyncio.Transport):
    def __init__(self):
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = self.aborted = False

    def write(self, data):
        self.writes.append(bytes(data))

    def close(self):
        self.closed = True

    def abort(self):
        self.aborted = True

    def is_closing(self):
        return self.closed or self.aborted

    def get_extra_info(self, name, default=None):
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8000)}.get(name, default)

    def pause_reading(self):
        pass

    def resume_reading(self):
        pass


def checked_protocol(app, **attributes) -> CheckedHttpProtocol:
    """The server's protocol serving `app` (a 1 KB body limit, no refusal text), its class attributes overridden by
    `attributes` (head_timeout=...). Made inside a running event loop."""
    config = uvicorn.Config(app, ws="none", lifespan="off", log_config=None, access_log=False)
    config.load()
    checks = RequestChecks(body_limit=lambda method, path: 1024, refusal=lambda *args: b"")
    protocol_class = type("Checked", (CheckedHttpProtocol,), {"checks": checks, **attributes})
    return protocol_class(config=config, server_state=ServerState(), app_state={})
