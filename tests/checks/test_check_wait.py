"""GET /api/v1/models/{id}/checks/{checkId}?waitSeconds=N: while the check is queued or running, the answer comes as
soon as it is done or failed (the check worker wakes the waiting requests of its host), or after N seconds with the
state then; without it (or 0), at once as before. No check process runs here: the worker's end is played by a
thread (its row updated, the wake-up sent), or by the worker's own code with the check process replaced."""

import threading

import pytest
from django.db import connection

from checks_app import services
from checks_app.engine.runner import CheckOutcome
from checks_app.models import Check
from checks_app.services import checks as check_services
from core.jobs import wakeup
from tests.checks.conftest import fire_ids
from tests.helpers import poll

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def queued(api, make_model, put_ids):
    model = make_model()
    put_ids("fire.ids", fire_ids())
    posted = api.post(f"/api/v1/models/{model.id}/checks", {"ids": ["fire.ids"]}, format="json").json()["data"]
    assert posted["status"] == "queued"
    return model.id, posted["checkId"]


def _ends_once_a_request_waits(check_id: str, **fields) -> threading.Thread:
    """The check worker's end of a check, once a request listens for it: the row updated, the wake-up sent."""

    def end():
        try:
            poll(lambda: list(wakeup.wakeup_dir(check_services.CHECK_ENDED).glob("*")), bool, timeout=60, interval=0.01)
            Check.objects.filter(pk=check_id).update(**fields)
            check_services.check_ended_notify()
        finally:
            connection.close()

    thread = threading.Thread(target=end, daemon=True)
    thread.start()
    return thread


def test_without_wait_seconds_the_check_is_answered_at_once(api, queued, monkeypatch):
    model_id, check_id = queued
    monkeypatch.setattr(wakeup, "WakeUp", lambda *_: pytest.fail("a request without waitSeconds waited"))
    for query in ("", "?waitSeconds=0", "?waitSeconds="):
        answer = api.get(f"/api/v1/models/{model_id}/checks/{check_id}{query}").json()
        assert answer["code"] == 0 and answer["data"]["status"] == "queued", query


def test_a_waiting_request_is_answered_when_the_worker_ends_the_check(api, queued, monkeypatch):
    model_id, check_id = queued
    monkeypatch.setattr(check_services, "WAIT_RECHECK_SECONDS", 60)  # only the wake-up can end the wait in time
    ending = _ends_once_a_request_waits(check_id, status=Check.Status.FAILED, error="the check process wrote no result")
    answer = api.get(f"/api/v1/models/{model_id}/checks/{check_id}?waitSeconds=30").json()
    ending.join(timeout=60)
    assert answer["code"] == 0 and (answer["data"]["status"], answer["data"]["error"]) == ("failed", "the check process wrote no result")
    assert list(wakeup.wakeup_dir(check_services.CHECK_ENDED).glob("*")) == []  # the request's socket is gone


def test_a_check_still_running_is_answered_with_its_state_after_the_wait(api, queued):
    model_id, check_id = queued
    Check.objects.filter(pk=check_id).update(status=Check.Status.RUNNING, progress_phase="checking", progress_percent=40)
    answer = api.get(f"/api/v1/models/{model_id}/checks/{check_id}?waitSeconds=0.2").json()
    assert answer["code"] == 0 and (answer["data"]["status"], answer["data"]["progress"]) == ("running", {"phase": "checking", "percent": 40})


def test_a_finished_check_is_answered_at_once_whatever_the_wait(api, queued, monkeypatch):
    model_id, check_id = queued
    Check.objects.filter(pk=check_id).update(status=Check.Status.FAILED, error="x")
    monkeypatch.setattr(wakeup, "WakeUp", lambda *_: pytest.fail("a finished check was waited for"))
    assert api.get(f"/api/v1/models/{model_id}/checks/{check_id}?waitSeconds=30").json()["data"]["status"] == "failed"


def test_past_the_waiting_requests_cap_a_request_is_answered_at_once(api, queued, monkeypatch):
    """A waiting request holds a gateway thread: when MAX_WAITING_REQUESTS are waiting, the next one does not wait."""
    model_id, check_id = queued
    slots = threading.BoundedSemaphore(1)
    monkeypatch.setattr(check_services, "_waiting_slots", slots)
    monkeypatch.setattr(wakeup, "WakeUp", lambda *_: pytest.fail("a request past the cap waited"))
    assert slots.acquire(blocking=False)  # the one slot taken by a request already waiting
    assert api.get(f"/api/v1/models/{model_id}/checks/{check_id}?waitSeconds=30").json()["data"]["status"] == "queued"
    slots.release()
    assert slots.acquire(blocking=False)  # and the refused request took no slot


@pytest.mark.parametrize("value", ["-1", "30.5", "31", "abc", "nan", "inf", "1e9"])
def test_a_wait_out_of_0_to_30_seconds_is_refused(api, queued, value):
    model_id, check_id = queued
    answer = api.get(f"/api/v1/models/{model_id}/checks/{check_id}?waitSeconds={value}")
    assert answer.status_code == 400 and answer.json()["code"] == 40001 and "waitSeconds" in answer.json()["message"]


def test_an_unknown_check_is_not_found_before_any_wait(api, queued):
    model_id, _ = queued
    answer = api.get(f"/api/v1/models/{model_id}/checks/chk_0000000000000000?waitSeconds=30")
    assert answer.status_code == 404


def test_the_check_worker_wakes_the_waiting_requests_when_a_check_ends(queued, monkeypatch):
    _, check_id = queued
    monkeypatch.setattr("checks_app.services.runs.run_check_process", lambda **_: CheckOutcome(False, "stopped here"))
    listener = wakeup.WakeUp(check_services.CHECK_ENDED)
    try:
        services.check_run(check_id)
        assert Check.objects.get(pk=check_id).status == Check.Status.FAILED
        assert listener.wait(0) is True  # the byte is there already
    finally:
        listener.close()
