"""The status of clashes across runs, and what reviewers set on a clash.

A run R is compared with the previous done run P of the same test (runs on a staged product are never a P):
present in R and in P -> active; present in R and not in P (never seen, or resolved / missing in P) -> new;
present in P and not in R -> resolved, or missing when one of its two elements is no longer in its model's current
metadata. A clash is one record through its whole life (Clash, id from the test and the two GlobalIds); each run
adds what it saw (ClashSighting). The reviewer's status (reviewed, approved) and the assignee belong to the clash
and persist across runs; an approved clash counts under approved, not new or active, while it is present: the run
that resolves it (or finds an element of it missing) ends its approval (it was accepted as it was; if it comes back
it is new and open again), while "reviewed" and the assignee stay.

A staged run (the agent trying a change before it saves) is compared the same way and keeps its sightings, but
changes no clash's status, facts, review or last run; a clash only it saw is recorded with status new and no last
run. So does a run that ends after a newer run of the test was already recorded (two clash workers): the clashes
keep the newer run's state.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from accounts_app.mode import accounts_enabled
from accounts_app.models import ProjectMember
from coordination_app.models import PRESENT, Clash, ClashRun, ClashSighting, ClashTest, clash_id_of
from coordination_app.services.clash_tests import invalid
from models_app.selectors import model_metadata

NO_CHANGE = object()


def _other_current_runs(run: ClashRun):
    """The test's other done runs that were not on a staged product (those that set its clashes' state)."""
    return ClashRun.objects.filter(test_id=run.test_id, status=ClashRun.Status.DONE, staged=False).exclude(pk=run.pk)


def previous_run(run: ClashRun) -> ClashRun | None:
    """The last done run of the same test before this one that was not on a staged product."""
    return _other_current_runs(run).filter(created_at__lt=run.created_at).order_by("-created_at").first()


def _side(model_id: str, guid: str, facts: dict) -> dict:
    fact = facts.get(model_id, {}).get(guid) or {}
    return {"modelId": model_id, "guid": guid, "type": fact.get("type") or "", "name": fact.get("name") or "", "storey": fact.get("storey") or ""}


class _Presence:
    """Whether an element is still in its model's current metadata (loaded once per model not in the run)."""

    def __init__(self, facts: dict):
        self.facts = dict(facts)

    def __call__(self, model_id: str, guid: str) -> bool:
        if model_id not in self.facts:
            try:
                self.facts[model_id] = {item["id"] for item in model_metadata(model_id).get("metaObjects", [])}
            except Exception:  # noqa: BLE001 - a model deleted or never converted: none of its elements exist
                self.facts[model_id] = set()
        return guid in self.facts[model_id]


def _sets_current_state(run: ClashRun) -> bool:
    """Whether the run's outcome becomes its clashes' current state: not a staged run, and no newer run of the test
    recorded before it."""
    return not run.staged and not _other_current_runs(run).filter(created_at__gt=run.created_at).exists()


def _rounded(point: Iterable[float]) -> list[float]:
    return [round(float(value), 6) for value in point]


def record_run(run: ClashRun, found: list, facts: dict) -> dict:
    """Records what the run found (ClashFacts; facts: model id -> GlobalId -> {type, name, storey} of the run's
    models) with each clash's status against the previous run; returns the summary. Inside the caller's
    transaction."""
    test = ClashTest.objects.select_for_update().get(pk=run.test_id)  # runs of one test record one after the other
    previous = previous_run(run)
    current = _sets_current_state(run)
    was_present = set(previous.sightings.filter(status__in=PRESENT).values_list("clash_id", flat=True)) if previous else set()
    seen: dict[str, object] = {}
    for fact in found:
        seen.setdefault(clash_id_of(test.project_id, test.name, fact.a_guid, fact.b_guid), fact)
    existing = Clash.objects.select_for_update().in_bulk([*seen, *was_present])
    sightings, changed, created = [], [], []
    for clash_id, fact in seen.items():
        status = Clash.Status.ACTIVE if clash_id in was_present else Clash.Status.NEW
        values = {"a": _side(fact.a_model, fact.a_guid, facts), "b": _side(fact.b_model, fact.b_guid, facts), "point": _rounded(fact.point),
                  "depth": fact.depth, "distance": fact.distance}
        clash = existing.get(clash_id)
        if clash is None:
            clash = Clash(id=clash_id, test=test, status=status, first_run=run, last_run=run if current else None, **values)
            created.append(clash)
        elif current:
            for key, value in {**values, "status": status, "last_run": run}.items():
                setattr(clash, key, value)
            changed.append(clash)
        sightings.append(ClashSighting(run=run, clash=clash, status=status, point=values["point"], depth=fact.depth, distance=fact.distance))
    present = _Presence({model_id: set(by_guid) for model_id, by_guid in facts.items()})
    for clash_id in sorted(was_present - set(seen)):
        clash = existing[clash_id]
        gone = not (present(clash.a["modelId"], clash.a["guid"]) and present(clash.b["modelId"], clash.b["guid"]))
        status = Clash.Status.MISSING if gone else Clash.Status.RESOLVED
        if current:
            clash.status, clash.last_run = status, run
            if clash.review_status == Clash.Review.APPROVED:
                clash.review_status = Clash.Review.NONE  # approved while present: gone, the approval ends
            changed.append(clash)
        sightings.append(ClashSighting(run=run, clash=clash, status=status, point=clash.point, depth=clash.depth, distance=clash.distance))
    Clash.objects.bulk_create(created, batch_size=500)
    Clash.objects.bulk_update(changed, ["a", "b", "point", "depth", "distance", "status", "review_status", "last_run"], batch_size=500)
    ClashSighting.objects.bulk_create(sightings, batch_size=500)
    return summary_of(sightings)


def summary_of(sightings: list[ClashSighting]) -> dict:
    """{new, active, resolved, missing, approved, total} of a run's sightings, with the clashes' review statuses."""
    summary = dict.fromkeys(("new", "active", "resolved", "missing", "approved", "total"), 0)
    for sighting in sightings:
        if sighting.status in PRESENT:
            summary["total"] += 1
            if sighting.clash.review_status == Clash.Review.APPROVED:
                summary["approved"] += 1
                continue
        summary[sighting.status] += 1
    return summary


def _assignee_checked(project_id: str, assignee) -> str:
    if not isinstance(assignee, str):
        raise invalid("assignedTo", "a project member's username, or \"\" for nobody")
    assignee = assignee.strip()
    if not assignee:
        return ""
    if accounts_enabled():
        if not ProjectMember.objects.filter(project_id=project_id, user__username=assignee).exists():
            raise invalid("assignedTo", f"{assignee!r} is not a member of project {project_id}")
    elif len(assignee) > 150:
        raise invalid("assignedTo", "at most 150 characters")
    return assignee


def clash_review(sighting: ClashSighting, *, review_status=NO_CHANGE, assigned_to=NO_CHANGE) -> Clash:
    """Sets the clash's reviewer status ("", reviewed, approved) and/or its assignee (a project member's username,
    "" for nobody; any name without accounts). Both kept for the clash's whole life."""
    clash = sighting.clash
    project_id = clash.test.project_id
    fields = {}
    if review_status is not NO_CHANGE:
        if review_status not in Clash.Review.values:
            raise invalid("reviewStatus", f"{review_status!r} is not one of \"\", reviewed, approved")
        fields["review_status"] = review_status
    if assigned_to is not NO_CHANGE:
        fields["assigned_to"] = _assignee_checked(project_id, assigned_to)
    if not fields:
        raise invalid("reviewStatus", "give reviewStatus and/or assignedTo")
    with transaction.atomic():
        Clash.objects.filter(pk=clash.pk).update(**fields)
    clash.refresh_from_db()
    return clash
