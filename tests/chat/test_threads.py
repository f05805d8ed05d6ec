"""The chat's blocking calls run on the event loop's pool threads (chat_app/threads.py), which outlive every request:
a call drops the thread's database connection first when it is past CONN_MAX_AGE or broken, as Django does at a
request's start, keeps a sound one, and looks at it at most every CONNECTION_CARE_SECONDS. A session's drain, woken
from a request's thread, starts in a context of its own."""

import asyncio
import contextvars
import threading

import pytest
from django.db import connection

from chat_app import lifecycle, threads
from chat_app.threads import in_thread, with_connection_care

pytestmark = pytest.mark.django_db(transaction=True)


def current_connection():
    connection.ensure_connection()
    return connection.connection


def call_on_this_thread(function):
    """The call in_thread makes on its pool thread, made here (the test database's connection is this thread's)."""
    return with_connection_care(function)()


@pytest.fixture
def care_each_call(monkeypatch):
    monkeypatch.setattr(threads, "CONNECTION_CARE_SECONDS", 0.0)


def test_a_connection_past_its_age_is_replaced_before_the_call(care_each_call):
    before = current_connection()
    connection.close_at = 0  # past CONN_MAX_AGE
    assert call_on_this_thread(current_connection) is not before


def test_a_broken_connection_is_replaced_before_the_call(care_each_call):
    before = current_connection()
    connection.errors_occurred = True
    connection.is_usable = lambda: False  # what a database restart leaves: the next query would fail
    try:
        assert call_on_this_thread(current_connection) is not before
    finally:
        del connection.is_usable


def test_a_sound_connection_is_kept(care_each_call):
    before = current_connection()
    assert call_on_this_thread(current_connection) is before


def test_the_connection_is_looked_at_once_in_the_interval(monkeypatch):
    monkeypatch.setattr(threads, "CONNECTION_CARE_SECONDS", 3600.0)
    monkeypatch.delattr(threads._cared, "at", raising=False)
    call_on_this_thread(current_connection)  # looked at
    before = current_connection()
    connection.close_at = 0
    assert call_on_this_thread(current_connection) is before  # not again within the hour


def test_in_thread_gives_its_calls_the_care_on_a_pool_thread(monkeypatch, care_each_call):
    cared_on = []
    monkeypatch.setattr(threads, "close_old_connections", lambda: cared_on.append(threading.get_ident()))
    ran_on = asyncio.run(in_thread(threading.get_ident)())
    assert ran_on != threading.get_ident()
    assert cared_on == [ran_on]


def test_a_drain_woken_from_a_request_thread_starts_in_a_context_of_its_own(monkeypatch):
    request_mark = contextvars.ContextVar("request_mark")
    seen = threading.Event()
    marks = []

    async def drain(session_id):
        marks.append(request_mark.get("none"))
        seen.set()

    loop = asyncio.new_event_loop()
    serving = threading.Thread(target=loop.run_forever)
    serving.start()
    try:
        monkeypatch.setattr(lifecycle, "drain", drain)
        monkeypatch.setattr(lifecycle, "_server_loop", loop)
        monkeypatch.setattr(lifecycle, "_drains", {})
        request_mark.set("the request's")  # as asgiref's ThreadSensitiveContext on a request's thread
        lifecycle.wake("c_0000000000000001")
        assert seen.wait(10)
        assert marks == ["none"]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        serving.join()
        loop.close()
