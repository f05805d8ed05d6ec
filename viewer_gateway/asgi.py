"""The gateway's ASGI application: Django for HTTP, and a refusal for every WebSocket (the gateway serves none).

Django's handler runs each request inside its own ThreadSensitiveContext, which owns a thread for the request's
synchronous parts (the middleware chain, signal receivers) until the response is fully sent. For an event stream
that is a thread held for as long as the stream stays open, so streams are handled without that context: their short
synchronous parts share one thread, and the stream itself is an async generator on the event loop (chat_app/stream.py).
"""

import asyncio
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "viewer_gateway.settings")

from django.core.asgi import get_asgi_application

django_asgi_app = get_asgi_application()

from chat_app.lifecycle import bind_server_loop  # noqa: E402 - after Django is set up
from viewer_gateway.edge import route_name, trusted_scope  # noqa: E402

EVENT_STREAM_ROUTES = frozenset({"chat-events"})


async def refuse_websocket(scope, receive, send):
    """Denies the handshake (Daphne answers 403) and ends without an error, whatever the path."""
    while True:
        message = await receive()
        if message["type"] == "websocket.connect":
            await send({"type": "websocket.close"})
        elif message["type"] == "websocket.disconnect":
            return


def _is_event_stream(scope) -> bool:
    path_info = scope["path"].removeprefix(scope.get("root_path", ""))
    return scope["method"] == "GET" and route_name(path_info) in EVENT_STREAM_ROUTES


async def application(scope, receive, send):
    bind_server_loop(asyncio.get_running_loop())  # chat turns run on the server's loop
    scope = trusted_scope(scope)
    if scope["type"] == "websocket":
        return await refuse_websocket(scope, receive, send)
    if scope["type"] == "http" and _is_event_stream(scope):
        return await django_asgi_app.handle(scope, receive, send)  # without a ThreadSensitiveContext, see above
    return await django_asgi_app(scope, receive, send)
