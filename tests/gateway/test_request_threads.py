"""The gateway's ASGI application runs each request's synchronous parts on a thread it keeps between requests
(viewer_gateway.asgi.RequestThreads), so Django's per-thread database connection is opened once, not per request;
requests at the same time still get a thread each."""

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async
from django.db import connections
from django.db.backends.signals import connection_created

import pytest

from viewer_gateway.asgi import RequestThreads, one_step_handler, request_threads


async def _thread_of_request(scope, receive, send):
    """A stand-in for Django's handler: one thread-sensitive synchronous step, as its middleware chain is."""
    await asyncio.sleep(0.05)  # keeps concurrent requests overlapping
    send["thread"] = await sync_to_async(threading.get_ident)()


def _in_own_loop(coroutine):
    """asyncio.run on a thread of its own: a test before may have left an event loop running on this one (Playwright's
    synchronous API does), where asyncio.run refuses to start."""
    with ThreadPoolExecutor(1) as runner:
        return runner.submit(asyncio.run, coroutine).result()


def _run(threads: RequestThreads, count: int, *, at_once: bool) -> list[int]:
    async def requests():
        records = [{} for _ in range(count)]
        calls = [threads.run(_thread_of_request, {}, None, record) for record in records]
        if at_once:
            await asyncio.gather(*calls)
        else:
            for call in calls:
                await call
        return [record["thread"] for record in records]

    return _in_own_loop(requests())


def test_requests_one_after_another_run_on_one_kept_thread():
    threads = _run(RequestThreads(), 5, at_once=False)
    assert len(set(threads)) == 1 and threads[0] != threading.get_ident()


def test_requests_at_the_same_time_get_a_thread_each_and_the_threads_are_kept():
    pool = RequestThreads()
    first = _run(pool, 3, at_once=True)
    assert len(set(first)) == 3
    assert set(_run(pool, 3, at_once=True)) == set(first)


def test_past_the_idle_limit_a_burst_s_extra_threads_end():
    pool = RequestThreads()
    pool.MAX_IDLE = 2
    assert len(set(_run(pool, 4, at_once=True))) == 4
    assert len(pool._idle) == 2


def _get(path: str) -> int:
    """One request through the application's handler on its threads (not the application itself: it would bind the
    chat turns to this short-lived event loop)."""

    async def one():
        sent = []
        messages = [{"type": "http.request", "body": b"", "more_body": False}]

        async def receive():
            return messages.pop() if messages else (await asyncio.sleep(3600))

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
                 "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
                 "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 5555), "server": ("127.0.0.1", 80)}
        await request_threads.run(one_step_handler.handle, scope, receive, send)  # as the application does
        return sent[0]["status"]

    return _in_own_loop(one())


@pytest.mark.django_db(transaction=True)
def test_the_gateway_opens_one_database_connection_for_several_requests():
    """Through the real application and a route that reads the database (the model list)."""
    opened = []

    def count(**_kwargs):
        opened.append(threading.get_ident())

    connection_created.connect(count)
    try:
        statuses = [_get("/api/v1/models") for _ in range(4)]
    finally:
        connection_created.disconnect(count)
        connections.close_all()
    assert statuses == [200] * 4
    assert len(opened) <= 1
