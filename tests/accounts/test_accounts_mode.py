"""The accounts mode across gateway processes (accounts_app.mode): the marker in the shared data directory is
looked at on every call, so a gateway sees the first user another process made at once; the users query runs
only while there is no marker, at most once per RECHECK_SECONDS."""

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from accounts_app import mode
from accounts_app.mode import MARKER_NAME, accounts_enabled

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock(monkeypatch):
    """This process's clock as the mode reads it, moved by hand; no users query remembered yet."""
    now = [1000.0]
    monkeypatch.setattr(mode.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(mode, "_no_users_seen_at", None)
    return now


def _user_made_elsewhere(username: str):
    """A user row as another process's insert leaves it: no post_save receiver of this process runs."""
    get_user_model().objects.bulk_create([get_user_model()(username=username)])


def test_a_second_gateway_sees_the_first_user_another_made_at_once(clock, settings, django_assert_num_queries):
    assert not accounts_enabled()  # open mode, and a users query just made
    _user_made_elsewhere("ana")
    (Path(settings.DATA_DIR) / MARKER_NAME).touch()  # what the other process's post_save receiver wrote
    with django_assert_num_queries(0):
        assert accounts_enabled()


def test_without_the_marker_users_are_asked_for_at_most_once_per_interval(clock, django_assert_num_queries):
    assert not accounts_enabled()
    with django_assert_num_queries(0):
        assert not accounts_enabled()
    clock[0] += mode.RECHECK_SECONDS
    with django_assert_num_queries(1):
        assert not accounts_enabled()


def test_users_older_than_the_marker_switch_the_accounts_on_and_write_it(clock, settings):
    """An upgrade, a restored database: users and no marker."""
    assert not accounts_enabled()
    _user_made_elsewhere("ana")
    clock[0] += mode.RECHECK_SECONDS
    assert accounts_enabled()
    assert (Path(settings.DATA_DIR) / MARKER_NAME).exists()


def test_the_first_user_made_here_switches_the_accounts_on_at_once(clock):
    assert not accounts_enabled()
    get_user_model().objects.create_user("ana")
    assert accounts_enabled()
