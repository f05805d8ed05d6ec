"""A run's clashes pinned as review issues (POST .../runs/{runId}/issues) and the issues following later runs: one
issue per clash or per group, never a second one on a second pin, a viewpoint aimed at the clash, resolved with a
comment naming the run that let its clashes go, reopened when a clash comes back, nothing twice on a re-delivered
run_finished. The runs are real (clash_setup: boxes whose clashes are known, the engine, the statuses)."""

from __future__ import annotations

import math
import uuid

import pytest

from accounts_app.models import ProjectMember
from coordination_app.issue_models import ClashIssue
from coordination_app.models import ClashRun, ClashSighting
from coordination_app.services.pinning import TOPIC_NAMESPACE
from coordination_app.services.runs import run_request
from coordination_app.signals import run_finished
from issues_app.models import Comment, Issue
from tests.accounts.people import error, person, post, signed_in
from tests.coordination.clash_setup import B1, B2, D1, D2, DUCT_D1_CROSSING, DUCT_D1_LOWERED, federated_project, move_duct, run_test

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]


@pytest.fixture
def fed():
    return federated_project()


def runs_url(fed, run_id: str) -> str:
    return f"/api/v1/projects/{fed['project'].id}/clash-tests/{fed['test'].name}/runs/{run_id}"


def pin(api, fed, run, body=None, status=200) -> dict:
    response = api.post(f"{runs_url(fed, run.id)}/issues", body or {}, format="json")
    assert response.status_code == status, response.content[:500]
    return response.json()


def issue_of(fed, a: str, b: str) -> Issue:
    """The per-clash issue of the clash of a and b."""
    return next(link.issue for link in ClashIssue.objects.select_related("issue").filter(per="clash")
                if {link.issue.viewpoints[0]["components"]["selection"][i]["ifc_guid"] for i in (0, 1)} == {a, b})


def inside(point, planes: list[dict]) -> bool:
    """Whether the point is on the kept side of every clipping plane (each normal points to the side clipped away)."""
    return all(sum((point[i] - plane["location"][a]) * plane["direction"][a] for i, a in enumerate("xyz")) < 0 for plane in planes)


def counts(answer: dict) -> dict:
    return {key: len(value) for key, value in answer["data"].items()}


def test_one_issue_per_clash_on_the_a_model_with_the_clash_facts_and_a_viewpoint_aimed_at_it(api, fed):
    run = run_test(fed["test"])
    answer = pin(api, fed, run)
    assert counts(answer) == {"created": 3, "reopened": 0, "resolved": 0, "unchanged": 0}
    sightings = {frozenset((s.clash.a["guid"], s.clash.b["guid"])): s for s in ClashSighting.objects.filter(run=run).select_related("clash")}
    assert set(sightings) == {frozenset((D1, B1)), frozenset((D1, B2)), frozenset((D2, B1))}

    issue = issue_of(fed, D1, B1)
    sighting = sightings[frozenset((D1, B1))]
    assert issue.model_id == fed["services"].id  # the model of the clash's a element (set A: the ducts)
    assert issue.bcf_topic_guid == str(uuid.uuid5(TOPIC_NAMESPACE, f"{fed['project'].id}/ducts-beams/{sighting.clash_id}"))
    assert (issue.topic_type, issue.labels, issue.entity_id, issue.entity_type) == ("Clash", ["Clash", "ducts-beams"], D1, "IfcDuctSegment")
    for fact in ("ducts-beams", "hard clash", run.id, sighting.clash_id, D1, B1, "Duct D1", "Beam B1", "IfcBeam", "Level 1",
                 fed["services"].id, fed["structure"].id, f"penetration depth {sighting.depth * 1000:.0f} mm"):
        assert fact in issue.comment, fact

    (viewpoint,) = issue.viewpoints
    components = viewpoint["components"]
    assert [c["ifc_guid"] for c in components["selection"]] == [D1, B1]
    assert [(c["color"], [x["ifc_guid"] for x in c["components"]]) for c in components["coloring"]] == [("E8412C", [D1]), ("2C7BE8", [B1])]
    assert components["visibility"]["default_visibility"] is False  # the others hidden
    assert [c["ifc_guid"] for c in components["visibility"]["exceptions"]] == [D1, B1]
    planes = viewpoint["clipping_planes"]
    assert len(planes) == 6
    point = sighting.point  # project frame = the models' frame here (no map conversion)
    assert inside(point, planes) and not inside([point[0] + 3, point[1], point[2]], planes)  # a box around the clash
    camera = viewpoint["perspective_camera"]
    eye, direction = [camera["camera_view_point"][a] for a in "xyz"], [camera["camera_direction"][a] for a in "xyz"]
    to_point = [p - e for p, e in zip(point, eye)]
    cosine = sum(d * t for d, t in zip(direction, to_point)) / math.dist(point, eye) / math.hypot(*direction)
    assert cosine > 0.95  # it looks at the clash


def test_with_map_conversions_the_viewpoint_is_in_the_frame_of_the_issues_model(api):
    fed = federated_project(services_offset=(12.0, -7.0, 0.5))  # the services model's origin lies elsewhere
    run = run_test(fed["test"])
    assert run.summary["total"] == 3  # placed by their map conversions, the boxes meet as before
    pin(api, fed, run)
    sighting = next(s for s in ClashSighting.objects.filter(run=run).select_related("clash") if {s.clash.a["guid"], s.clash.b["guid"]} == {D1, B1})
    issue = issue_of(fed, D1, B1)
    assert issue.model_id == fed["services"].id
    planes = issue.viewpoints[0]["clipping_planes"]
    local = [sighting.point[0] - 12.0, sighting.point[1] + 7.0, sighting.point[2] - 0.5]  # the point in the services model's frame
    assert inside(local, planes) and not inside(sighting.point, planes)


def test_pinning_again_never_duplicates_per_clash_nor_per_group(api, fed):
    run = run_test(fed["test"])
    first = pin(api, fed, run)
    assert counts(pin(api, fed, run)) == {"created": 0, "reopened": 0, "resolved": 0, "unchanged": 3}
    assert sorted(e["issueId"] for e in pin(api, fed, run)["data"]["unchanged"]) == sorted(e["issueId"] for e in first["data"]["created"])

    by_storey = pin(api, fed, run, {"per": "group", "group": "storey"})
    assert counts(by_storey) == {"created": 1, "reopened": 0, "resolved": 0, "unchanged": 0}  # all three on Level 1
    assert len(by_storey["data"]["created"][0]["clashIds"]) == 3
    group_planes = Issue.objects.get(pk=by_storey["data"]["created"][0]["issueId"]).viewpoints[0]["clipping_planes"]
    assert all(inside(s.point, group_planes) for s in ClashSighting.objects.filter(run=run))  # the section box takes in the group
    assert counts(pin(api, fed, run, {"per": "group", "group": "storey"}))["unchanged"] == 1
    by_element = pin(api, fed, run, {"per": "group", "group": "element"})
    assert sorted(len(e["clashIds"]) for e in by_element["data"]["created"]) == [1, 2]  # D1 with its two beams; B1 with D2
    assert counts(pin(api, fed, run, {"per": "group", "group": "element"}))["created"] == 0
    assert Issue.objects.count() == 3 + 1 + 2

    again = run_test(fed["test"])  # a later run of the same clashes: still the same issues
    assert counts(pin(api, fed, again)) == {"created": 0, "reopened": 0, "resolved": 0, "unchanged": 3}
    assert Issue.objects.count() == 6


def test_an_issue_is_resolved_by_the_run_that_lets_its_clashes_go_and_reopened_when_one_comes_back(api, fed):
    first = run_test(fed["test"])
    pin(api, fed, first)
    pin(api, fed, first, {"per": "group", "group": "storey"})
    d1b1, d1b2, d2b1 = issue_of(fed, D1, B1), issue_of(fed, D1, B2), issue_of(fed, D2, B1)
    storey = ClashIssue.objects.get(per="group").issue

    move_duct(fed["services"], DUCT_D1_LOWERED)  # D1 under the beams: its two clashes are gone
    second = run_test(fed["test"])
    for issue in (d1b1, d1b2):
        issue.refresh_from_db()
        assert issue.status == "resolved"
        (comment,) = issue.comments.all()
        assert second.id in comment.text and "Resolved" in comment.text and comment.author == "clash-detection"
    for issue in (d2b1, storey):  # D2 still clashes with B1
        issue.refresh_from_db()
        assert (issue.status, issue.comments.count()) == ("open", 0)

    run_finished.send(sender=ClashRun, run_id=second.id, staged=False)  # delivered again: nothing twice
    assert Comment.objects.count() == 2

    move_duct(fed["services"], DUCT_D1_CROSSING)  # D1 back across the beams
    third = run_test(fed["test"])
    for issue in (d1b1, d1b2):
        issue.refresh_from_db()
        assert issue.status == "open"
        texts = list(issue.comments.values_list("text", flat=True))
        assert len(texts) == 2 and third.id in texts[1] and "Reopened" in texts[1]
    run_finished.send(sender=ClashRun, run_id=third.id, staged=False)
    run_finished.send(sender=ClashRun, run_id=second.id, staged=False)  # an older run delivered late changes nothing either
    assert Comment.objects.count() == 4
    assert Issue.objects.get(pk=d1b1.pk).status == "open"


def test_a_staged_run_resolves_nothing(api, fed):
    pin(api, fed, run_test(fed["test"]))
    move_duct(fed["services"], DUCT_D1_LOWERED)
    staged = run_test(fed["test"], staged=True)  # each model.ifc meshed: D1 lowered there too
    assert (staged.summary["resolved"], staged.summary["total"]) == (2, 1)
    assert not Issue.objects.filter(status="resolved").exists() and not Comment.objects.exists()
    response = api.post(f"{runs_url(fed, staged.id)}/issues", {}, format="json")
    assert (response.status_code, response.json()["code"]) == (409, 40900)


def test_a_pin_of_the_issues_resolves_those_whose_clashes_the_run_has_no_more(api, fed):
    pin(api, fed, run_test(fed["test"]))
    move_duct(fed["services"], DUCT_D1_LOWERED)
    run_finished.disconnect(dispatch_uid="coordination_app.issue_receivers.settle_pinned_issues")
    try:
        later = run_test(fed["test"])
    finally:
        from coordination_app.issue_receivers import settle_pinned_issues

        run_finished.connect(settle_pinned_issues, dispatch_uid="coordination_app.issue_receivers.settle_pinned_issues")
    assert counts(pin(api, fed, later)) == {"created": 0, "reopened": 0, "resolved": 2, "unchanged": 1}


@pytest.mark.parametrize(("body", "field"), [
    ({"per": "element"}, "per"),
    ({"per": "group"}, "group"),
    ({"per": "group", "group": "by-proximity:-1"}, "group"),
    ({"per": "group", "group": "colour"}, "group"),
])
def test_bad_pins_are_40001_naming_the_field(api, fed, body, field):
    run = run_test(fed["test"])
    response = api.post(f"{runs_url(fed, run.id)}/issues", body, format="json")
    assert (response.status_code, response.json()["code"]) == (400, 40001)
    assert field in response.json()["message"]
    assert not Issue.objects.exists()


def test_a_run_not_done_is_40900_and_an_unknown_run_40400(api, fed):
    queued = run_request(fed["test"])
    response = api.post(f"{runs_url(fed, queued.id)}/issues", {}, format="json")
    assert (response.status_code, response.json()["code"]) == (409, 40900)
    response = api.post(f"{runs_url(fed, 'r_0000000000000000')}/issues", {}, format="json")
    assert (response.status_code, response.json()["code"]) == (404, 40400)


def test_a_reviewer_pins_signed_with_their_account_and_a_viewer_reads_the_report_only(fed):
    bob, vera = person("bob"), person("vera")
    ProjectMember.objects.create(project=fed["project"], user=bob, role="reviewer")
    ProjectMember.objects.create(project=fed["project"], user=vera, role="viewer")
    run = run_test(fed["test"])
    url = runs_url(fed, run.id)
    assert "may not review" in error(post(signed_in(vera), f"{url}/issues", {}), 403, 40300)
    assert signed_in(vera).get(f"{url}/report.bcfzip").status_code == 200
    answer = post(signed_in(bob), f"{url}/issues", {"author": "someone else"})
    assert answer.status_code == 200 and len(answer.json()["data"]["created"]) == 3
    assert set(Issue.objects.values_list("author", "author_verified")) == {("bob", True)}


def test_a_pin_that_would_create_many_issues_needs_confirm_and_counts_only_new_ones(api, fed, monkeypatch):
    monkeypatch.setattr("coordination_app.services.pinning.PIN_CONFIRM_ABOVE", 2)  # the run has 3 clashes
    run = run_test(fed["test"])
    refused = pin(api, fed, run, {"per": "clash"}, status=400)
    assert (refused["code"], refused["data"]) == (40001, {"field": "confirm", "issues": 3, "confirmAbove": 2})
    assert refused["message"].startswith("confirm: pinning per clash would create 3 issues") and "per group" in refused["message"]
    assert not Issue.objects.exists() and not ClashIssue.objects.exists()  # nothing half-written
    assert counts(pin(api, fed, run, {"per": "group", "group": "storey"})) == {"created": 1, "reopened": 0, "resolved": 0, "unchanged": 0}
    assert counts(pin(api, fed, run, {"per": "clash", "confirm": True}))["created"] == 3
    assert counts(pin(api, fed, run, {"per": "clash"})) == {"created": 0, "reopened": 0, "resolved": 0, "unchanged": 3}  # none new: no confirm


def test_an_issue_a_person_resolved_while_its_clash_stays_is_not_reopened_until_the_clash_comes_back(api, fed):
    first = run_test(fed["test"])
    pin(api, fed, first)
    accepted = issue_of(fed, D1, B1)
    Issue.objects.filter(pk=accepted.pk).update(status="resolved")  # closed by a person; the clash is still there
    run_test(fed["test"])  # active: nothing came back
    accepted.refresh_from_db()
    assert (accepted.status, accepted.comments.count()) == ("resolved", 0)

    move_duct(fed["services"], DUCT_D1_LOWERED)
    run_test(fed["test"])
    move_duct(fed["services"], DUCT_D1_CROSSING)  # gone, then back: new in this run
    back = run_test(fed["test"])
    accepted.refresh_from_db()
    assert accepted.status == "open" and back.id in accepted.comments.last().text


def test_a_run_whose_model_left_the_project_pins_nothing(api, fed):
    from models_app.models import Project, ProjectModel

    run = run_test(fed["test"])
    annex = Project.objects.create(title="Annex", kind="ifc")
    ProjectModel.objects.filter(model=fed["services"]).update(project=annex)  # the issues would live in Annex's model
    refused = pin(api, fed, run, status=409)
    assert refused["code"] == 40900 and f"model {fed['services'].id} of run {run.id} is no longer in project" in refused["message"]
    assert not Issue.objects.exists() and not ClashIssue.objects.exists()
