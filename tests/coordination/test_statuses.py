"""Clash status across versions, with real runs: two models of boxes (structure: beams, services: ducts) converted for
real, an automatic hard clash test re-run by every conversion that makes one of them ready, the runs run here as
a clash worker runs them. new -> active -> resolved, an approved clash kept approved (and out of the open count)
while present, an element gone from its model -> missing, a clash that comes back is the same record, new again."""

from __future__ import annotations

import pytest

from coordination_app.models import Clash, ClashRun, clash_id_of
from coordination_app.signals import run_finished
from tests.accounts.people import post
from tests.coordination.clash_helpers import BEAM, BEAM_2, DUCT, DUCT_2, box, converted_model, reconverted, run_queued
from tests.helpers import ok

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

STRUCTURE = {
    BEAM: box("IfcBeam", "Beam B1", (0, 0, 3), (10, 0.3, 0.5)),
    BEAM_2: box("IfcBeam", "Beam B2", (0, 4, 3), (10, 0.3, 0.5)),
}
DUCT_CROSSING = box("IfcDuctSegment", "Duct D1", (2, -1, 3.1), (0.4, 6, 0.3))  # inside both beams' depth: 0.4 m to move out up or down
DUCT_LOWERED = box("IfcDuctSegment", "Duct D1", (2, -1, 1.0), (0.4, 6, 0.3))
SERVICES = {DUCT: DUCT_CROSSING, DUCT_2: box("IfcDuctSegment", "Duct D2", (8, -1, 3.1), (0.4, 2, 0.3))}  # crosses B1 only


@pytest.fixture
def finished():
    """The run_finished signals sent: [(run_id, staged)]."""
    heard = []

    def hear(sender, run_id, staged, **kwargs):
        heard.append((run_id, staged))

    run_finished.connect(hear, dispatch_uid="test-statuses")
    yield heard
    run_finished.disconnect(dispatch_uid="test-statuses")


def statuses(api, project, run_id: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(a guid, b guid) -> (status, reviewStatus) of the run's clashes."""
    rows = ok(api.get(f"/api/v1/projects/{project.id}/clash-tests/ducts/runs/{run_id}/clashes"))
    return {(row["a"]["guid"], row["b"]["guid"]): (row["status"], row["reviewStatus"]) for row in rows}


def last_run(api, project) -> dict:
    return ok(api.get(f"/api/v1/projects/{project.id}/clash-tests/ducts/runs"))[0]


def test_statuses_over_three_versions(api, finished):
    from models_app.models import Project

    project = Project.objects.create(title="Tower", kind=Project.Kind.IFC)
    structure = converted_model(project, STRUCTURE, "structure.ifc")
    services = converted_model(project, SERVICES, "services.ifc")
    test = ok(post(api, f"/api/v1/projects/{project.id}/clash-tests/ducts", {
        "a": {"models": [services.id], "classes": ["IfcFlowSegment"]}, "b": {"models": [structure.id], "classes": ["IfcBeam"]},
        "type": "hard", "automatic": True,
    }, method="put"))
    assert test["automatic"] and not ClashRun.objects.exists()  # defining a test runs nothing

    # v1: the first run, asked for; three clashes, all new
    started = ok(post(api, f"/api/v1/projects/{project.id}/clash-tests/ducts/runs", {}))
    assert (started["status"], started["progress"]) == ("queued", {"phase": "queued", "percent": 0})
    assert run_queued() == [started["runId"]]
    first = last_run(api, project)
    assert (first["status"], first["trigger"], first["progress"]["percent"]) == ("done", "user", 100)
    assert sorted(first["models"], key=lambda m: m["modelId"]) == sorted(
        [{"modelId": services.id, "version": "v1"}, {"modelId": structure.id, "version": "v1"}], key=lambda m: m["modelId"])
    assert first["summary"] == {"new": 3, "active": 0, "resolved": 0, "missing": 0, "approved": 0, "total": 3}
    assert statuses(api, project, first["runId"]) == {(DUCT, BEAM): ("new", ""), (DUCT, BEAM_2): ("new", ""), (DUCT_2, BEAM): ("new", "")}
    rows = ok(api.get(f"/api/v1/projects/{project.id}/clash-tests/ducts/runs/{first['runId']}/clashes"))
    crossing = next(row for row in rows if (row["a"]["guid"], row["b"]["guid"]) == (DUCT, BEAM))
    assert crossing["clashId"] == clash_id_of(project.id, "ducts", BEAM, DUCT)
    assert crossing["a"] == {"modelId": services.id, "guid": DUCT, "type": "IfcDuctSegment", "name": "Duct D1", "storey": "Level 1"}
    assert crossing["b"] == {"modelId": structure.id, "guid": BEAM, "type": "IfcBeam", "name": "Beam B1", "storey": "Level 1"}
    assert crossing["depth"] == pytest.approx(0.4, abs=0.001) and "distance" not in crossing
    assert 2 - 1e-6 <= crossing["point"][0] <= 2.4 + 1e-6 and 3.1 - 1e-6 <= crossing["point"][2] <= 3.4 + 1e-6
    approved_id = clash_id_of(project.id, "ducts", DUCT_2, BEAM)
    ok(post(api, f"/api/v1/projects/{project.id}/clash-tests/ducts/runs/{first['runId']}/clashes/{approved_id}",
            {"reviewStatus": "approved"}, method="patch"))
    assert last_run(api, project)["summary"] == {"new": 2, "active": 0, "resolved": 0, "missing": 0, "approved": 1, "total": 3}

    # v2: the services model saved again unchanged: its automatic run sees the same clashes, active; approved kept
    reconverted(services.id, SERVICES)
    (second_id,) = run_queued()
    second = last_run(api, project)
    assert (second["runId"], second["trigger"]) == (second_id, "automatic")
    assert second["summary"] == {"new": 0, "active": 2, "resolved": 0, "missing": 0, "approved": 1, "total": 3}
    assert statuses(api, project, second_id) == {(DUCT, BEAM): ("active", ""), (DUCT, BEAM_2): ("active", ""), (DUCT_2, BEAM): ("active", "approved")}
    assert ok(api.get(f"/api/v1/projects/{project.id}/clash-tests/ducts/runs/{second_id}/clashes", {"status": "open"})).__len__() == 2

    # v3: the duct lowered under the beams and beam B2 deleted: both models become ready, one run (the second
    # conversion finds the first's run still queued) -> resolved, missing; the approved clash stays approved
    reconverted(structure.id, {BEAM: STRUCTURE[BEAM]})
    reconverted(services.id, {**SERVICES, DUCT: DUCT_LOWERED})
    (third_id,) = run_queued()
    third = last_run(api, project)
    assert third["summary"] == {"new": 0, "active": 0, "resolved": 1, "missing": 1, "approved": 1, "total": 1}
    assert statuses(api, project, third_id) == {(DUCT, BEAM): ("resolved", ""), (DUCT, BEAM_2): ("missing", ""), (DUCT_2, BEAM): ("active", "approved")}
    assert [row["b"]["guid"] for row in ok(api.get(f"/api/v1/projects/{project.id}/clash-tests/ducts/runs/{third_id}/clashes",
                                                   {"status": "missing"}))] == [BEAM_2]

    # v4: the duct back up: the same clash record comes back, new again; nothing was ever re-created
    reconverted(services.id, SERVICES)
    (fourth_id,) = run_queued()
    assert statuses(api, project, fourth_id) == {(DUCT, BEAM): ("new", ""), (DUCT_2, BEAM): ("active", "approved")}
    assert Clash.objects.count() == 3
    assert dict(Clash.objects.values_list("id", "status")) == {
        clash_id_of(project.id, "ducts", DUCT, BEAM): "new", clash_id_of(project.id, "ducts", DUCT, BEAM_2): "missing", approved_id: "active"}
    assert Clash.objects.get(pk=crossing["clashId"]).first_run_id == first["runId"]
    # the history stays readable: the first run still answers what it saw
    assert statuses(api, project, first["runId"])[(DUCT, BEAM)] == ("new", "")
    assert finished == [(first["runId"], False), (second_id, False), (third_id, False), (fourth_id, False)]
