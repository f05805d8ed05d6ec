"""The gateway's request cycle (viewer_gateway.asgi.OneStepHandler): a request's synchronous work is one step on its
own thread, its answers are those Django's own ASGI handler gives (same middleware, same headers, same envelope),
and a streaming answer is sent as Django sends it: to the end, or until the client goes away, then closed."""

import asyncio
import gzip
import io
import json
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core import signals
from django.http import FileResponse, StreamingHttpResponse
from django.test import override_settings
from django.urls import path

from tests.gateway.test_request_threads import _in_own_loop
from tests.proxy.test_proxy_faults import FakeEditService, model, serving  # noqa: F401 - fixture
from viewer_gateway import asgi
from viewer_gateway.asgi import OneStepHandler, RequestThreads, django_asgi_app, one_step_handler, request_threads

pytestmark = pytest.mark.django_db(transaction=True)  # the request runs on a thread of its own, with its own connection


def _scope(method: str, target: str, headers: dict[str, str]) -> dict:
    route, _, query = target.partition("?")
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
        "path": route, "raw_path": route.encode(), "query_string": query.encode(), "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8090"), *((name.lower().encode(), value.encode()) for name, value in headers.items())],
        "client": ("127.0.0.1", 5555), "server": ("127.0.0.1", 8090),
    }


async def _exchange(app, scope: dict, body: bytes = b"", *, disconnect_after_first_chunk: bool = False) -> list[dict]:
    """The messages `app` sends for one request. The client stays connected until the answer ends, or goes away
    once the first body chunk has arrived."""
    sent: list[dict] = []
    first_chunk, ended = asyncio.Event(), asyncio.Event()
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        if messages:
            return messages.pop()
        await (first_chunk.wait() if disconnect_after_first_chunk else ended.wait())
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)
        if message["type"] == "http.response.body":
            first_chunk.set()
            if not message.get("more_body"):
                ended.set()

    await app(scope, receive, send)
    return sent


def _answer(handle, method: str, target: str, headers: dict[str, str] | None = None, body: bytes = b""):
    """(status, headers sorted, body) of one request through `handle` on the application's kept threads. A gzipped
    body is given uncompressed, without its length: Django's gzip adds random bytes to each (BREACH)."""
    scope = _scope(method, target, headers or {})
    sent = _in_own_loop(_exchange(lambda s, r, se: request_threads.run(handle, s, r, se), scope, body))
    answer_headers = sorted(sent[0]["headers"])
    answer_body = b"".join(m.get("body", b"") for m in sent[1:])
    if (b"Content-Encoding", b"gzip") in answer_headers:
        answer_headers = [(name, value) for name, value in answer_headers if name != b"Content-Length"]
        answer_body = gzip.decompress(answer_body)
    return sent[0]["status"], answer_headers, answer_body


@pytest.fixture
def edit_service(viewer_config):
    service = FakeEditService()
    service.body = {"script": "x = 1\n" * 100, "version": "v3"}  # large enough to be compressed
    yield from serving(viewer_config, service)


ALLOWED_ORIGIN = "http://localhost:5173"  # in corsOrigins by default


@pytest.mark.parametrize(
    "method, route, headers, body",
    [
        ("GET", "script", {"Origin": ALLOWED_ORIGIN, "Accept-Encoding": "gzip"}, b""),
        ("GET", "edit/versions?limit=2", {}, b""),
        ("POST", "script/undo", {"Content-Type": "application/json"}, b"{}"),
        ("POST", "script/run", {"Content-Type": "application/json"}, b"[" * 200 + b"]" * 200),  # too deep: refused
        ("DELETE", "script", {}, b""),  # no rule for the method
        ("POST", "script/undo", {"Origin": "http://elsewhere.example"}, b""),  # cross-site: refused at the edge
        ("OPTIONS", "script", {"Origin": ALLOWED_ORIGIN, "Access-Control-Request-Method": "PUT"}, b""),  # preflight
        ("GET", "../nowhere", {}, b""),
    ],
)
def test_answers_are_those_of_djangos_own_handler(edit_service, model, method, route, headers, body):  # noqa: F811
    target = f"/api/v1/models/{model.id}/{route}"
    ours = _answer(one_step_handler.handle, method, target, headers, body)
    djangos = _answer(django_asgi_app, method, target, headers, body)
    assert ours == djangos
    assert ours[0] in (200, 400, 403, 404)  # answered by the gateway, not a server error


def test_unknown_model_and_unknown_path_answer_the_envelope(edit_service):
    status, _, body = _answer(one_step_handler.handle, "GET", "/api/v1/models/m_0123456789abcdef/script")
    assert (status, json.loads(body)["code"]) == (404, 40400)
    status, _, body = _answer(one_step_handler.handle, "GET", "/no/such/page")
    assert (status, json.loads(body)["code"]) == (404, 40400)
    assert edit_service.received == []


class CountingExecutor(ThreadPoolExecutor):
    submitted = 0

    def submit(self, *args, **kwargs):
        CountingExecutor.submitted += 1
        return super().submit(*args, **kwargs)


def test_a_request_s_synchronous_work_is_one_step_on_the_request_s_thread(edit_service, model, monkeypatch):  # noqa: F811
    """Through the application: request_started, the middleware chain and view (which calls the edit service),
    request_finished, all in one call on the request's thread, so one hop from the event loop and back (Django's
    handler makes three)."""
    monkeypatch.setattr(asgi, "ThreadPoolExecutor", CountingExecutor)
    monkeypatch.setattr(asgi, "request_threads", RequestThreads())
    monkeypatch.setattr(asgi, "bind_server_loop", lambda loop: None)  # chat turns stay on the server's loop
    seen = []

    def record(**_kwargs):
        seen.append(threading.get_ident())

    signals.request_started.connect(record)
    signals.request_finished.connect(record)
    try:
        CountingExecutor.submitted = 0
        sent = _in_own_loop(_exchange(asgi.application, _scope("GET", f"/api/v1/models/{model.id}/script", {})))
    finally:
        signals.request_started.disconnect(record)
        signals.request_finished.disconnect(record)
    assert sent[0]["status"] == 200 and len(edit_service.received) == 1
    assert CountingExecutor.submitted == 1
    [executor] = asgi.request_threads._idle
    [thread] = executor._threads
    assert seen == [thread.ident] * 2


def test_a_request_s_path_is_resolved_once(edit_service, model, monkeypatch):  # noqa: F811
    """The edge's token check, the access middleware and the handler's dispatch take one look-up of the route
    (edge.resolved_route), not one each; a path without a route is still Django's 404."""
    from django.urls import get_resolver
    from django.urls.resolvers import URLResolver

    from viewer_gateway import edge

    edge._resolved.cache_clear()
    looked_up, root, resolve = [], get_resolver(), URLResolver.resolve
    monkeypatch.setattr(URLResolver, "resolve", lambda self, path: (self is root and looked_up.append(path)) or resolve(self, path))
    target = f"/api/v1/models/{model.id}/script"
    assert _answer(one_step_handler.handle, "GET", target)[0] == 200
    assert _answer(one_step_handler.handle, "GET", target)[0] == 200
    assert looked_up == [target] and len(edit_service.received) == 2
    assert _answer(one_step_handler.handle, "GET", "/api/v1/no-such-route")[0] == 404


# A handler without middleware on a URL configuration of this module, for the streaming mechanics alone.
produced: list[int] = []
closed = threading.Event()


class Chunks:
    """A streamed body made on the event loop (as the event stream's is), one chunk at a time."""

    def __init__(self, count: int):
        self.count = count

    async def __aiter__(self):
        for index in range(self.count):
            produced.append(index)
            await asyncio.sleep(0.001)
            yield b"%d\n" % index

    def close(self):
        closed.set()


def stream_view(request, count):
    return StreamingHttpResponse(Chunks(count), content_type="text/plain")


FILE_CONTENT = bytes(range(256)) * (8 * asgi.FILE_READ_BYTES // 256)  # 8 blocks
file_reads: list[int] = []


class CountedFile(io.BytesIO):
    def read(self, size=-1):
        file_reads.append(size)
        return super().read(size)


def file_view(request):
    return FileResponse(CountedFile(FILE_CONTENT), content_type="application/octet-stream")


def made_in_turn(count: int):
    """A streamed body made by a synchronous generator (a report written part by part, say)."""
    for index in range(count):
        produced.append(index)
        yield b"%d\n" % index


def sync_stream_view(request, count):
    return StreamingHttpResponse(made_in_turn(count), content_type="text/plain")


urlpatterns = [path("stream/<int:count>", stream_view), path("file", file_view), path("sync-stream/<int:count>", sync_stream_view)]


@pytest.fixture
def streaming_handler():
    produced.clear()
    closed.clear()
    file_reads.clear()
    with override_settings(MIDDLEWARE=[], ROOT_URLCONF=__name__):
        yield OneStepHandler()


def test_a_streaming_answer_is_sent_to_the_end_then_closed(streaming_handler):
    sent = _in_own_loop(_exchange(streaming_handler, _scope("GET", "/stream/5", {})))
    assert sent[0]["status"] == 200
    assert b"".join(m.get("body", b"") for m in sent[1:]) == b"0\n1\n2\n3\n4\n"
    assert sent[-1] == {"type": "http.response.body"}  # the closing message
    assert closed.is_set()


def test_a_streaming_answer_stops_when_the_client_goes_away_and_is_closed(streaming_handler):
    sent = _in_own_loop(_exchange(streaming_handler, _scope("GET", "/stream/2000", {}), disconnect_after_first_chunk=True))
    assert sent[0]["status"] == 200
    assert len(produced) < 2000
    assert closed.is_set()


def test_a_file_is_sent_whole_without_django_reading_it_into_a_list_first(streaming_handler):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Django warns when it consumes a synchronous iterator whole under ASGI
        sent = _in_own_loop(_exchange(streaming_handler, _scope("GET", "/file", {})))
    assert sent[0]["status"] == 200
    assert dict(sent[0]["headers"])[b"Content-Length"] == str(len(FILE_CONTENT)).encode()
    assert b"".join(m.get("body", b"") for m in sent[1:]) == FILE_CONTENT


def test_a_file_is_read_as_it_is_sent(streaming_handler):
    """A client gone after the first chunk: the file's later blocks are never read (Django had read all 8 before
    sending a byte)."""
    sent = _in_own_loop(_exchange(streaming_handler, _scope("GET", "/file", {}), disconnect_after_first_chunk=True))
    assert sent[0]["status"] == 200
    assert file_reads and set(file_reads) == {asgi.FILE_READ_BYTES}
    assert len(file_reads) < 8, file_reads


def test_a_synchronous_stream_is_made_as_it_is_sent(streaming_handler):
    sent = _in_own_loop(_exchange(streaming_handler, _scope("GET", "/sync-stream/5", {})))
    assert b"".join(m.get("body", b"") for m in sent[1:]) == b"0\n1\n2\n3\n4\n"
    produced.clear()
    sent = _in_own_loop(_exchange(streaming_handler, _scope("GET", "/sync-stream/2000", {}), disconnect_after_first_chunk=True))
    assert sent[0]["status"] == 200
    assert len(produced) < 2000  # Django made all 2,000 parts before sending the first
