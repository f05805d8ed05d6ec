"""Two rules of the clash status (issue 34, item 6) beyond new -> active -> resolved: an approved clash stays approved
while present, and only then (the run that resolves it ends the approval, "reviewed" and the assignee stay; back, it
is new and open again); and a run that ends after a newer run of its test was recorded (two clash workers) keeps its
sightings but does not set the clashes' state back to its older versions. Real runs over the federated boxes of
clash_setup."""

from __future__ import annotations

import pytest

from coordination_app.models import Clash, ClashRun, clash_id_of
from coordination_app.selectors import clash_of_run, run_summary
from coordination_app.services import clash_review, clash_run_now, run_request
from tests.coordination.clash_setup import B1, B2, D1, D2, DUCT_D1_CROSSING, DUCT_D1_LOWERED, federated_project, move_duct, run_test

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]


@pytest.fixture
def fed():
    return federated_project()


def clash(fed, a: str, b: str) -> Clash:
    return Clash.objects.get(pk=clash_id_of(fed["project"].id, fed["test"].name, a, b))


def test_an_approval_ends_when_its_clash_goes_and_the_clash_comes_back_open(fed):
    first = run_test(fed["test"])
    approved, reviewed = clash(fed, D1, B1), clash(fed, D1, B2)
    clash_review(clash_of_run(first, approved.id), review_status="approved", assigned_to="ana")
    clash_review(clash_of_run(first, reviewed.id), review_status="reviewed", assigned_to="bo")
    clash_review(clash_of_run(first, clash(fed, D2, B1).id), review_status="approved")
    again = run_test(fed["test"])
    assert run_summary(again) == {"new": 0, "active": 1, "resolved": 0, "missing": 0, "approved": 2, "total": 3}  # kept while present

    move_duct(fed["services"], DUCT_D1_LOWERED)
    gone = run_test(fed["test"])
    assert run_summary(gone) == {"new": 0, "active": 0, "resolved": 2, "missing": 0, "approved": 1, "total": 1}
    assert [(c.status, c.review_status, c.assigned_to) for c in (clash(fed, D1, B1), clash(fed, D1, B2))] == [
        ("resolved", "", "ana"), ("resolved", "reviewed", "bo")]
    assert clash(fed, D2, B1).review_status == "approved"  # still present: still approved

    move_duct(fed["services"], DUCT_D1_CROSSING)
    back = run_test(fed["test"])
    assert run_summary(back) == {"new": 2, "active": 0, "resolved": 0, "missing": 0, "approved": 1, "total": 3}  # back in the open count
    assert (clash(fed, D1, B1).status, clash(fed, D1, B1).first_run_id) == ("new", first.id)  # the same record


def test_a_staged_run_ends_no_approval(fed):
    first = run_test(fed["test"])
    clash_review(clash_of_run(first, clash(fed, D1, B1).id), review_status="approved")
    move_duct(fed["services"], DUCT_D1_LOWERED)
    run_test(fed["test"], staged=True)
    assert (clash(fed, D1, B1).status, clash(fed, D1, B1).review_status) == ("new", "approved")


def test_a_run_recorded_after_a_newer_one_leaves_the_clashes_state_to_the_newer(fed):
    run_test(fed["test"])
    older = run_request(fed["test"])  # two runs queued: two workers take them, the newer ends first
    newer = run_request(fed["test"])
    move_duct(fed["services"], DUCT_D1_LOWERED)
    clash_run_now(newer.id)
    move_duct(fed["services"], DUCT_D1_CROSSING)
    clash_run_now(older.id)
    older.refresh_from_db()
    newer.refresh_from_db()
    assert (older.status, newer.status) == (ClashRun.Status.DONE, ClashRun.Status.DONE)
    assert clash_of_run(older, clash(fed, D1, B1).id).status == "active"  # what the older run saw stays readable
    crossing = clash(fed, D1, B1)
    assert (crossing.status, crossing.last_run_id) == ("resolved", newer.id)  # the state is the newer run's
    later = run_test(fed["test"])  # and the next run compares with the newer one
    assert clash_of_run(later, crossing.id).status == "new"
