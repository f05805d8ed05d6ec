"""The chat's blocking calls run on the event loop's pool threads (chat_app/threads.py), which outlive every request:
a call drops the thread's database connection first when it is past CONN_MAX_AGE or broken, as Django does at a
request's start, keeps a sound one, and looks at it at most every CONNECTION_CARE_SECONDS."""

import pytest
from django.db import connection

from chat_app import threads
from chat_app.threads import in_thread

pytestmark = pytest.mark.django_db(transaction=True)


def current_connection():
    connection.ensure_connection()
    return connection.connection


def call_on_this_thread(function):
    """The call in_thread makes on its pool thread, made here (SyncToAsync keeps the function it wraps)."""
    return in_thread(function).func()


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
