"""Read-side queries of coordination: a project's clash tests, a test's runs, a run's clashes (filtered, grouped)."""

from __future__ import annotations

import re

from django.db.models import Count, Q, QuerySet

from coordination_app.models import CLASH_ID_PATTERN, PRESENT, RUN_ID_PATTERN, TEST_NAME_PATTERN, Clash, ClashRun, ClashSighting, ClashTest
from core.errors import Invalid
from core.lookups import get_or_not_found
from models_app.selectors import project_get

TEST_NAME_RE = re.compile(rf"^{TEST_NAME_PATTERN}$")
RUN_ID_RE = re.compile(rf"^{RUN_ID_PATTERN}$")
CLASH_ID_RE = re.compile(rf"^{CLASH_ID_PATTERN}$")

# ?status= of a run's clashes: a status of that run, or "approved" (present and approved) / "open" (present, not)
APPROVED, OPEN = "approved", "open"
STATUS_FILTERS = (*Clash.Status.values, APPROVED, OPEN)


def clash_test_list(project_id: str) -> QuerySet:
    return ClashTest.objects.filter(project=project_get(project_id)).order_by("name")


def clash_test_get(project_id: str, name: str) -> ClashTest:
    project = project_get(project_id)
    return get_or_not_found(
        ClashTest.objects, project=project, name=name, well_formed=bool(TEST_NAME_RE.match(name or "")),
        invalid=f"clash test {name!r} not found (names are letters, digits, '.', '_' and '-', at most 64)",
        missing=f"project {project.id} has no clash test {name!r}",
    )


def clash_run_list(project_id: str, name: str) -> QuerySet:
    """The test's runs, newest first."""
    return ClashRun.objects.filter(test=clash_test_get(project_id, name)).order_by("-created_at")


def clash_run_get(project_id: str, name: str, run_id: str) -> ClashRun:
    test = clash_test_get(project_id, name)
    return get_or_not_found(
        ClashRun.objects.select_related("test"), pk=run_id, test=test, well_formed=bool(RUN_ID_RE.match(run_id or "")),
        invalid=f"run {run_id!r} not found (ids look like r_ + 16 lowercase hex digits)",
        missing=f"clash test {test.name} has no run {run_id}",
    )


def run_summary(run: ClashRun) -> dict | None:
    """{new, active, resolved, missing, approved, total} of a done run, with today's review statuses: an approved
    present clash counts under approved, not under new or active; total = the present clashes."""
    if run.status != ClashRun.Status.DONE:
        return run.summary
    approved = Q(clash__review_status=Clash.Review.APPROVED)
    counts = run.sightings.aggregate(
        new=Count("id", filter=Q(status=Clash.Status.NEW) & ~approved),
        active=Count("id", filter=Q(status=Clash.Status.ACTIVE) & ~approved),
        resolved=Count("id", filter=Q(status=Clash.Status.RESOLVED)),
        missing=Count("id", filter=Q(status=Clash.Status.MISSING)),
        approved=Count("id", filter=Q(status__in=PRESENT) & approved),
        total=Count("id", filter=Q(status__in=PRESENT)),
    )
    return counts


def run_sightings(run: ClashRun, status: str | None = None) -> QuerySet:
    """What the run saw: its present clashes and those it resolved or found missing, optionally one status."""
    sightings = run.sightings.select_related("clash").order_by("id")
    if status in (None, ""):
        return sightings
    if status not in STATUS_FILTERS:
        raise Invalid(f"status: {status!r} is not one of {', '.join(STATUS_FILTERS)}", data={"status": [f"unknown status {status!r}"]})
    if status == APPROVED:
        return sightings.filter(status__in=PRESENT, clash__review_status=Clash.Review.APPROVED)
    if status == OPEN:
        return sightings.filter(status__in=PRESENT).exclude(clash__review_status=Clash.Review.APPROVED)
    return sightings.filter(status=status)


def clash_of_run(run: ClashRun, clash_id: str) -> ClashSighting:
    """The run's sighting of the clash; 40400 for a clash the run did not list."""
    return get_or_not_found(
        run.sightings.select_related("clash"), clash_id=clash_id, well_formed=bool(CLASH_ID_RE.match(clash_id or "")),
        invalid=f"clash {clash_id!r} not found (ids look like c_ + 16 lowercase hex digits)",
        missing=f"run {run.id} has no clash {clash_id}",
    )
