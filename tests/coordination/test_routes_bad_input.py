"""The routes of clash tests, runs and clashes refuse bad input with 40001 naming the field, unknown tests, runs and
clashes with 40400, a run over models that are not ready with 40900, and write nothing when they refuse; who may do
what follows the project roles (viewer reads, reviewer runs and reviews, editor defines tests)."""

from __future__ import annotations

import pytest

from accounts_app.models import ProjectMember
from coordination_app.models import Clash, ClashRun, ClashSighting, ClashTest, clash_id_of
from models_app.models import IfcModel
from tests.accounts.people import error, person, post, project_with_models, signed_in
from tests.helpers import ok

pytestmark = pytest.mark.django_db


@pytest.fixture
def tower():
    """A project with two ready models (no files: enough for every check before a run), and another project."""
    project, models = project_with_models("Tower", models=2)
    other, (stranger,) = project_with_models("Other", models=1)
    return project, models, stranger


def clash_tests_url(project) -> str:
    return f"/api/v1/projects/{project.id}/clash-tests"


def put_test(client, project, name: str, body):
    return post(client, f"{clash_tests_url(project)}/{name}", body, method="put")


def hard(models, **fields) -> dict:
    return {"a": {"models": [models[0].id]}, "b": {"models": [models[1].id]}, "type": "hard", **fields}


@pytest.mark.parametrize("change, field", [
    (lambda m, s: {"a": {"models": ["m_0000000000000000"]}}, "a.models"),
    (lambda m, s: {"b": {"models": [s.id]}}, "b.models"),
    (lambda m, s: {"a": {"models": []}}, "a.models"),
    (lambda m, s: {"a": {"models": "m"}}, "a.models"),
    (lambda m, s: {"a": {"models": [m[0].id], "classes": []}}, "a.classes"),
    (lambda m, s: {"a": {"models": [m[0].id], "colour": "red"}}, "a.colour"),
    (lambda m, s: {"a": None}, "a"),
    (lambda m, s: {"tolerance": -0.01}, "tolerance"),
    (lambda m, s: {"tolerance": "1cm"}, "tolerance"),
    (lambda m, s: {"distance": -1}, "distance"),
    (lambda m, s: {"type": "soft"}, "type"),
    (lambda m, s: {"type": "clearance", "distance": 0}, "distance"),
    (lambda m, s: {"automatic": "sometimes"}, "automatic"),
])
def test_a_bad_test_definition_names_its_field_and_writes_nothing(api, tower, change, field):
    project, models, stranger = tower
    ok(put_test(api, project, "ducts-vs-beams", hard(models, tolerance=0.02)))
    before = ClashTest.objects.get().tolerance
    message = error(put_test(api, project, "ducts-vs-beams", {**hard(models), **change(models, stranger)}), 400, 40001)
    assert message.startswith(f"{field}:"), message
    message = error(put_test(api, project, "another", {**hard(models), **change(models, stranger)}), 400, 40001)
    assert message.startswith(f"{field}:"), message
    assert list(ClashTest.objects.values_list("name", "tolerance")) == [("ducts-vs-beams", before)]


def test_an_unknown_ifc_class_is_named_and_a_known_one_with_subclasses_is_kept(api, tower):
    project, models, _ = tower
    message = error(put_test(api, project, "t", hard(models, a={"models": [models[0].id], "classes": ["IfcDuctThing"]})), 400, 40001)
    assert message.startswith("a.classes:") and "IfcDuctThing" in message
    message = error(put_test(api, project, "t", hard(models, b={"models": [models[1].id], "exclude": ["IfcNope"]})), 400, 40001)
    assert message.startswith("b.exclude:")
    body = hard(models, a={"models": [models[0].id], "classes": ["IfcElement"], "exclude": ["IfcFeatureElement", "IfcSpace"]})
    test = ok(put_test(api, project, "t", body))
    assert test["a"] == {"models": [models[0].id], "classes": ["IfcElement"], "exclude": ["IfcFeatureElement", "IfcSpace"]}
    assert (test["created"], test["type"], test["tolerance"], test["b"]["classes"]) == (True, "hard", 0.01, None)


def test_a_bad_test_name_and_unknown_tests_runs_and_clashes(api, tower):
    project, models, _ = tower
    assert error(put_test(api, project, "-dash-first", hard(models)), 400, 40001).startswith("name:")
    assert error(put_test(api, project, "x" * 65, hard(models)), 400, 40001).startswith("name:")
    error(api.get(f"{clash_tests_url(project)}/nope"), 404, 40400)
    error(api.delete(f"{clash_tests_url(project)}/nope"), 404, 40400)
    error(post(api, f"{clash_tests_url(project)}/nope/runs", {}), 404, 40400)
    ok(put_test(api, project, "t", hard(models)))
    runs = f"{clash_tests_url(project)}/t/runs"
    for run_id in ("r_0000000000000000", "bogus"):
        error(api.get(f"{runs}/{run_id}"), 404, 40400)
        error(api.get(f"{runs}/{run_id}/clashes"), 404, 40400)
        error(post(api, f"{runs}/{run_id}/cancel", {}), 404, 40400)
    run = ClashRun.objects.create(test=ClashTest.objects.get(), status=ClashRun.Status.DONE, summary={})
    error(post(api, f"{runs}/{run.id}/clashes/c_0000000000000000", {"reviewStatus": "reviewed"}, method="patch"), 404, 40400)
    error(api.get("/api/v1/projects/p_0000000000000000/clash-tests"), 404, 40400)


def test_a_run_over_a_model_that_is_not_ready_is_refused_and_nothing_is_queued(api, tower):
    project, models, _ = tower
    ok(put_test(api, project, "t", hard(models)))
    IfcModel.objects.filter(pk=models[1].id).update(status="converting")
    message = error(post(api, f"{clash_tests_url(project)}/t/runs", {}), 409, 40900)
    assert models[1].id in message and "converting" in message
    assert not ClashRun.objects.exists()
    assert error(post(api, f"{clash_tests_url(project)}/t/runs", {"staged": "maybe"}), 400, 40001).startswith("staged:")


@pytest.fixture
def seen_clash(tower):
    """A done run of test t that saw one clash between the two models."""
    project, models, _ = tower
    from coordination_app.services import clash_test_put

    test, _ = clash_test_put(project_id=project.id, name="t", a={"models": [models[0].id]}, b={"models": [models[1].id]})
    run = ClashRun.objects.create(test=test, status=ClashRun.Status.DONE, summary={})
    side = {"type": "IfcBeam", "name": "B", "storey": "L1"}
    clash = Clash.objects.create(id=clash_id_of(project.id, "t", "g1", "g2"), test=test, a={"modelId": models[0].id, "guid": "g1", **side},
                                 b={"modelId": models[1].id, "guid": "g2", **side}, point=[1, 2, 3], depth=0.1, first_run=run, last_run=run)
    ClashSighting.objects.create(run=run, clash=clash, status="new", point=[1, 2, 3], depth=0.1)
    return project, f"{clash_tests_url(project)}/t/runs/{run.id}", clash


def test_bad_filters_groupings_and_review_fields_name_their_field(api, seen_clash):
    project, run_url, clash = seen_clash
    assert error(api.get(f"{run_url}/clashes?status=open-ish"), 400, 40001).startswith("status:")
    for group in ("floors", "by-proximity:", "by-proximity:-1", "by-proximity:x"):
        assert error(api.get(f"{run_url}/clashes", {"group": group}), 400, 40001).startswith("group:")
    assert ok(api.get(f"{run_url}/clashes", {"group": "by-proximity:0.5", "status": "new"}))[0]["groupId"] == f"proximity:{clash.id}"
    clash_url = f"{run_url}/clashes/{clash.id}"
    assert error(post(api, clash_url, {"reviewStatus": "done"}, method="patch"), 400, 40001).startswith("reviewStatus:")
    assert error(post(api, clash_url, {"assignedTo": 7}, method="patch"), 400, 40001).startswith("assignedTo:")
    assert error(post(api, clash_url, {}, method="patch"), 400, 40001).startswith("reviewStatus:")
    clash.refresh_from_db()
    assert (clash.review_status, clash.assigned_to) == ("", "")
    answer = ok(post(api, clash_url, {"reviewStatus": "approved", "assignedTo": "someone"}, method="patch"))  # no accounts: any name
    assert (answer["clashId"], answer["reviewStatus"], answer["assignedTo"], answer["status"]) == (clash.id, "approved", "someone", "new")


def test_roles_viewer_reads_reviewer_runs_and_reviews_editor_defines(seen_clash):
    project, run_url, clash = seen_clash
    people = {role: person(name) for role, name in (("owner", "olga"), ("editor", "ed"), ("reviewer", "rita"), ("viewer", "vic"))}
    for role, user in people.items():
        ProjectMember.objects.create(project=project, user=user, role=role)
    outsider = signed_in(person("otto"))
    viewer, reviewer, editor = (signed_in(people[role]) for role in ("viewer", "reviewer", "editor"))
    models = list(project.ifc_models.order_by("project_link__id"))
    definition = hard(models)

    assert [t["name"] for t in ok(viewer.get(clash_tests_url(project)))] == ["t"]
    ok(viewer.get(f"{run_url}/clashes"))
    error(put_test(viewer, project, "t2", definition), 403, 40300)
    error(post(viewer, f"{run_url}/clashes/{clash.id}", {"reviewStatus": "reviewed"}, method="patch"), 403, 40300)
    error(post(viewer, f"{clash_tests_url(project)}/t/runs", {}), 403, 40300)
    error(put_test(reviewer, project, "t2", definition), 403, 40300)
    error(reviewer.delete(f"{clash_tests_url(project)}/t"), 403, 40300)
    error(outsider.get(clash_tests_url(project)), 404, 40400)

    message = error(post(reviewer, f"{run_url}/clashes/{clash.id}", {"assignedTo": "otto"}, method="patch"), 400, 40001)
    assert message.startswith("assignedTo:") and "otto" in message
    answer = ok(post(reviewer, f"{run_url}/clashes/{clash.id}", {"reviewStatus": "reviewed", "assignedTo": "ed"}, method="patch"))
    assert (answer["reviewStatus"], answer["assignedTo"]) == ("reviewed", "ed")
    assert ok(post(reviewer, f"{run_url}/clashes/{clash.id}", {"assignedTo": ""}, method="patch"))["assignedTo"] == ""
    created = ok(put_test(editor, project, "t2", definition))
    assert (created["created"], created["createdBy"]) == (True, "ed")
    ok(editor.delete(f"{clash_tests_url(project)}/t2"))
    assert list(ClashTest.objects.values_list("name", flat=True)) == ["t"]
