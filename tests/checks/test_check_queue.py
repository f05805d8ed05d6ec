"""The check queue: turns taken fairly across requesters by the real django-tasks worker loop (one check at a time, as
`manage.py check_worker` runs it), failures that would repeat answered from the cache, lost turns given back."""

import pytest
from django.utils import timezone
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

from checks_app import services
from checks_app.jobs import CHECK
from checks_app.models import Check
from core import jobs
from core.jobs.tasks import CHECK_QUEUE
from tests.checks.conftest import fire_ids
from tests.helpers import sample

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]


def work_off_the_queue() -> None:
    """The check worker's own loop (django-tasks' db_worker) until the queue is empty."""
    Worker(queue_names=[CHECK_QUEUE], interval=0, batch=True, backend_name="default", startup_delay=False, max_tasks=None,
           worker_id="test-check-worker", excluded_queue_names=[]).run()


def post_check(api, model_id: str, ids_name: str) -> str:
    response = api.post(f"/api/v1/models/{model_id}/checks", {"ids": [ids_name]}, format="json").json()
    assert response["code"] == 0, response
    return response["data"]["checkId"]


def test_a_check_of_another_model_is_not_queued_behind_a_flood(api, make_model, put_ids):
    flooded, other = make_model(), make_model()
    for index in range(3):
        put_ids(f"flood{index}.ids", fire_ids(title=f"Flood {index}"))
    put_ids("fire.ids", fire_ids())
    flood = [post_check(api, flooded.id, f"flood{index}.ids") for index in range(3)]
    behind = post_check(api, other.id, "fire.ids")

    work_off_the_queue()
    checks = Check.objects.filter(status=Check.Status.DONE).order_by("started_at")
    assert [check.id for check in checks] == [flood[0], behind, flood[1], flood[2]]
    assert {check.requester for check in checks} == {flooded.id, other.id}
    assert not DBTaskResult.objects.ready().exists()


def test_requesters_take_turns_and_a_busy_one_waits(make_model):
    first, second = make_model(), make_model()
    f1, f2, s1, s2 = (Check.objects.create(model=model, version="current", product_key="p", ids=[], cache_key=f"k{index}", requester=model.id)
                      for index, model in enumerate((first, first, second, second)))

    def order() -> list[str]:
        return [check.id for check in services.fair_order(Check.objects.filter(status=Check.Status.QUEUED))]

    assert order()[0] == f1.id  # both waiting since their oldest check: first's is older
    Check.objects.filter(pk=f1.pk).update(status=Check.Status.RUNNING, started_at=timezone.now())
    assert order() == [s1.id, s2.id, f2.id]  # first has a check running
    Check.objects.filter(pk=f1.pk).update(status=Check.Status.DONE, finished_at=timezone.now())
    assert order() == [s1.id, s2.id, f2.id]  # first waits since its check ended, after second's oldest came
    Check.objects.filter(pk=s1.pk).update(status=Check.Status.DONE, started_at=timezone.now(), finished_at=timezone.now())
    assert order() == [f2.id, s2.id]  # now second has just been served


def test_a_check_over_its_time_limit_is_stopped_and_answered_from_the_cache_until_the_limit_changes(api, make_model, put_ids, start_check, monkeypatch):
    monkeypatch.setenv("VIEWER_CHECK_TIMEOUT_SECONDS", "0.01")
    model = make_model(sample("duplex.ifc"))  # reading it alone takes longer than 10 ms (the walls are checked in less)
    put_ids("fire.ids", fire_ids())
    failed = start_check(model.id, {"ids": ["fire.ids"]})
    assert failed["status"] == "failed" and "time limit of 0.01 s" in failed["error"]

    turns = DBTaskResult.objects.count()
    again = start_check(model.id, {"ids": ["fire.ids"]}, run=False)
    assert (again["checkId"], again["status"], again["cached"]) == (failed["checkId"], "failed", True)
    assert Check.objects.count() == 1 and DBTaskResult.objects.count() == turns  # nothing queued

    monkeypatch.setenv("VIEWER_CHECK_TIMEOUT_SECONDS", "300")  # the operator gives checks more time: run again
    rerun = start_check(model.id, {"ids": ["fire.ids"]})
    assert rerun["checkId"] != failed["checkId"] and (rerun["status"], rerun["cached"]) == ("done", False)


def test_lost_turns_are_given_back_once(api, make_model, put_ids):
    model = make_model()
    put_ids("a.ids", fire_ids(title="A"))
    put_ids("b.ids", fire_ids(title="B"))
    first, second = post_check(api, model.id, "a.ids"), post_check(api, model.id, "b.ids")
    assert services.recover_interrupted_checks() == []

    DBTaskResult.objects.filter(args_kwargs__args=["check", second]).delete()  # a turn lost
    assert services.recover_interrupted_checks() == [second]
    assert services.recover_interrupted_checks() == []
    assert sorted(args["args"][1] for args in DBTaskResult.objects.ready().values_list("args_kwargs", flat=True)) == sorted([first, second])

    jobs.enqueue("check", first)  # a turn too many finds nothing to run
    work_off_the_queue()
    assert set(Check.objects.values_list("status", flat=True)) == {Check.Status.DONE}


def test_a_lone_waiting_check_is_claimed_without_the_fair_order(make_model):
    """The fair order's query (subqueries per requester) is only run when two or more checks wait; a turn with one
    waiting takes it directly, and a turn with two takes the one the fair order puts first."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    busy, idle = make_model(), make_model()
    running = Check.objects.create(model=busy, version="current", product_key="p", ids=[], cache_key="k0", requester=busy.id,
                                   status=Check.Status.RUNNING, worker="elsewhere")
    first = Check.objects.create(model=busy, version="current", product_key="p", ids=[], cache_key="k1", requester=busy.id)
    with CaptureQueriesContext(connection) as queries:
        claimed = jobs.claim(CHECK, Check.objects.all(), in_turn=True)
    assert claimed.id == first.id and claimed.status == Check.Status.RUNNING
    assert not [query for query in queries.captured_queries if "EXISTS" in query["sql"].upper()]

    Check.objects.filter(pk__in=[running.pk, first.pk]).update(status=Check.Status.RUNNING)
    older = Check.objects.create(model=busy, version="current", product_key="p", ids=[], cache_key="k2", requester=busy.id)
    newer = Check.objects.create(model=idle, version="current", product_key="p", ids=[], cache_key="k3", requester=idle.id)
    with CaptureQueriesContext(connection) as queries:
        claimed = jobs.claim(CHECK, Check.objects.all(), in_turn=True)
    assert claimed.id == newer.id != older.id  # the busy requester's older check waits
    assert [query for query in queries.captured_queries if "EXISTS" in query["sql"].upper()]
