"""The gateway's ASGI application: Django for HTTP (the server, serving/http_server.py, refuses every WebSocket upgrade).

Django's handler runs each request inside its own ThreadSensitiveContext, which owns a thread for the request's
synchronous parts (the middleware chain, signal receivers) until the response is fully sent. Left to itself it
starts a new thread per request, and with it a new database connection (Django's are per thread): 1-2 ms per
request. Here each request gets an idle thread of the gateway's own (RequestThreads), so its connection stays open
across requests (CONN_MAX_AGE), as in a threaded WSGI server; a request still has its thread to itself. For an event stream
that is a thread held for as long as the stream stays open, so streams are handled without that context: their short
synchronous parts share one thread, and the stream itself is an async generator on the event loop (chat_app/stream.py).

Every other request goes through OneStepHandler: Django's handler would hop from the event loop to the request's
thread and back three times per request (request_started, the middleware chain, response.close), each hop two
thread switches; here the synchronous work is one hop (docs/architecture/gateway.md, docs/benchmarks/2026-11-26-proxy.md).
"""

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "viewer_gateway.settings")

from django.core.asgi import get_asgi_application

django_asgi_app = get_asgi_application()

from asgiref.sync import ThreadSensitiveContext, sync_to_async  # noqa: E402
from django.core import signals  # noqa: E402
from django.core.exceptions import RequestAborted  # noqa: E402
from django.core.handlers.asgi import ASGIHandler, get_script_prefix  # noqa: E402
from django.core.handlers.base import BaseHandler  # noqa: E402
from django.http import FileResponse  # noqa: E402
from django.urls import ResolverMatch, set_script_prefix  # noqa: E402

from chat_app.lifecycle import bind_server_loop  # noqa: E402 - after Django is set up
from viewer_gateway.edge import request_route, route_name, trusted_scope  # noqa: E402

EVENT_STREAM_ROUTES = frozenset({"chat-events"})


def _close_connections() -> None:
    from django.db import connections

    connections.close_all()  # the calling thread's


class RequestThreads:
    """Single-thread executors kept between requests: one request at a time on each, at most MAX_IDLE kept idle (a
    burst's extra threads close their database connections and end). Used from the event loop only."""

    MAX_IDLE = 16

    def __init__(self):
        self._idle: list[ThreadPoolExecutor] = []

    async def run(self, app, scope, receive, send):
        executor = self._idle.pop() if self._idle else ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")
        try:
            async with ThreadSensitiveContext(executor=executor):  # Django's own context inside defers to this one
                return await app(scope, receive, send)
        finally:
            if len(self._idle) < self.MAX_IDLE:
                self._idle.append(executor)
            else:
                executor.submit(_close_connections)
                executor.shutdown(wait=False)


request_threads = RequestThreads()


class OneStepHandler(ASGIHandler):
    """Django's ASGI handler with the request's synchronous work done in one call on the request's thread: the
    request_started signal, the request object, the (synchronous) middleware chain and view, and, for an answer
    already in memory, response.close() with request_finished; the event loop then sends it. The middleware, the
    views and the signals are Django's own, as a WSGI server would run them. A streaming answer (files, ranges) is
    sent as Django sends it, stopped when the client goes away, and closed on the request's thread afterwards; a
    synchronous one (a file's blocks) is read a part at a time as the parts are sent (_read_in_turn)."""

    def __init__(self):
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)

    def resolve_request(self, request):
        """The route the access middleware decided on (edge.request_route), not a second look-up; a copy with its own
        kwargs, which the middleware's process_view and the view receive, so that nothing a request does to them
        reaches the route kept for the next request of the path."""
        kept = None if hasattr(request, "urlconf") else request_route(request)
        if kept is None:
            return super().resolve_request(request)  # Django's Resolver404, or a request's own URLconf (set_urlconf)
        route = ResolverMatch(
            kept.func, kept.args, dict(kept.kwargs), kept.url_name, kept.app_names, kept.namespaces, kept.route, kept.tried,
            kept.captured_kwargs, kept.extra_kwargs,
        )  # (a ResolverMatch refuses copy.copy: it may not be pickled)
        request.resolver_match = route
        return route

    def _respond(self, scope, body_file):
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
            response._handler_class = self.__class__
            if isinstance(response, FileResponse):
                response.block_size = FILE_READ_BYTES
            if response.streaming and not response.is_async:
                response.streaming_content = _read_in_turn(response.streaming_content)
        if not response.streaming:
            response.close()
        return response

    async def handle(self, scope, receive, send):
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            set_script_prefix(get_script_prefix(scope))
            response = await sync_to_async(self._respond)(scope, body_file)
            if response.streaming:
                await self._stream(response, receive, send)
            else:
                await self.send_response(response, send)  # a client gone by now: the server drops it
        finally:
            body_file.close()

    async def _stream(self, response, receive, send):
        """As Django does it: the sending is cancelled when the client goes away (listen_for_disconnect)."""
        tasks = [asyncio.create_task(self.listen_for_disconnect(receive)), asyncio.create_task(self.send_response(response, send))]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
            await sync_to_async(response.close)()
        for outcome in outcomes:
            if isinstance(outcome, Exception) and not isinstance(outcome, RequestAborted):
                raise outcome


# a file answer is read this much at a time, on the request's thread (Django sends it on in chunks of 64 KB)
FILE_READ_BYTES = 1024 * 1024


def _read_in_turn(parts):
    """A synchronous streaming answer's parts (a file's blocks) as an asynchronous iterator, each part made when the
    last one was sent. Django's ASGI handler reads a synchronous iterator whole into a list before it sends a byte (a
    whole model.xkt in memory per download, its first byte after its last read); this one keeps the server's flow
    control, so a slow client holds one part, not the file."""
    parts = iter(parts)
    take = sync_to_async(next)  # on the request's thread (ThreadSensitiveContext)

    async def in_turn():
        while (part := await take(parts, None)) is not None:
            yield part

    return in_turn()


one_step_handler = OneStepHandler()


def _is_event_stream(scope) -> bool:
    path_info = scope["path"].removeprefix(scope.get("root_path", ""))
    return scope["method"] == "GET" and route_name(path_info) in EVENT_STREAM_ROUTES


async def application(scope, receive, send):
    bind_server_loop(asyncio.get_running_loop())  # chat turns run on the server's loop
    scope = trusted_scope(scope)
    if scope["type"] == "http" and _is_event_stream(scope):
        return await django_asgi_app.handle(scope, receive, send)  # without a ThreadSensitiveContext, see above
    return await request_threads.run(one_step_handler.handle, scope, receive, send)
