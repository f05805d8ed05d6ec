"""Use cases of coordination, one module per sub-domain: a project's clash tests (clash_tests), requesting,
cancelling and running clash runs (runs), and the status of clashes across runs with what reviewers set on them
(statuses). The reads are in coordination_app.selectors."""

from coordination_app.services.clash_tests import clash_test_delete, clash_test_put
from coordination_app.services.runs import (
    clash_run_now,
    queue_automatic_runs,
    run_cancel,
    run_claimed,
    run_leftovers,
    run_request,
)
from coordination_app.services.statuses import NO_CHANGE, clash_review, record_run

__all__ = [
    "NO_CHANGE", "clash_review", "clash_run_now", "clash_test_delete", "clash_test_put", "queue_automatic_runs",
    "record_run", "run_cancel", "run_claimed", "run_leftovers", "run_request",
]
