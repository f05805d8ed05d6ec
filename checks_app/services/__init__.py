"""Use cases of automated review, one module per sub-domain: IDS files of a project (ids_files), requesting a check
and its cache (checks), running checks in the check workers (runs), report files (report_files), failures pinned as
review issues (pins) and a check explained for the agent (explain). The reads are in checks_app.selectors."""

from checks_app.services.checks import (
    check_get_waiting,
    check_memory_limit_mb,
    check_start,
    check_time_limit_seconds,
    wait_seconds_param,
)
from checks_app.services.explain import check_get, failures_explain
from checks_app.services.ids_files import ids_file_delete, ids_file_put
from checks_app.services.pins import check_pin_issues
from checks_app.services.report_files import check_report_bcf, check_report_html
from checks_app.services.runs import (
    check_claimed_run,
    check_leftovers,
    check_run,
    check_take_turn,
    fair_order,
    recover_interrupted_checks,
)

__all__ = [
    "check_claimed_run", "check_get", "check_get_waiting", "check_leftovers", "check_memory_limit_mb", "check_pin_issues",
    "check_report_bcf", "check_report_html", "check_run", "check_start", "check_take_turn", "check_time_limit_seconds",
    "failures_explain", "fair_order", "ids_file_delete", "ids_file_put", "recover_interrupted_checks", "wait_seconds_param",
]
