"""An attacker's probe of the coordination routes (issue 34): models in a project, the federation, clash tests, runs,
clashes, their issues and BCF report, with the accounts of tests/accounts. Each test states what must hold: a
caller reaches only the projects it is a member of, with what its role allows, and bad input is refused before
anything is written."""

from __future__ import annotations

import io
import json

import pytest
from django.test import Client

from accounts_app.models import ProjectMember
from coordination_app.models import Clash, ClashRun, ClashSighting, ClashTest, clash_id_of
from coordination_app.services import clash_test_put
from issues_app.models import Issue
from models_app.models import IfcModel, ProjectModel
from tests.accounts.people import bearer, error, person, post, project_with_models, signed_in, token_of
from tests.accounts.test_attack_regressions import share_link_client
from tests.helpers import ok

pytestmark = pytest.mark.django_db

SIDE = {"type": "IfcBeam", "name": "B", "storey": "L1"}


def clash_tests_at(project) -> str:
    return f"/api/v1/projects/{project.id}/clash-tests"


def seen(project, models, name: str = "t", guids=("g1", "g2")) -> tuple[ClashRun, Clash]:
    """A done run of test `name` over the project's two models that saw one clash."""
    test, _ = clash_test_put(project_id=project.id, name=name, a={"models": [models[0].id]}, b={"models": [models[1].id]})
    run = ClashRun.objects.create(test=test, status=ClashRun.Status.DONE, summary={},
                                  model_versions=[{"modelId": model.id, "version": "v1"} for model in models])
    clash = Clash.objects.create(id=clash_id_of(project.id, name, *guids), test=test, a={"modelId": models[0].id, "guid": guids[0], **SIDE},
                                 b={"modelId": models[1].id, "guid": guids[1], **SIDE}, point=[1, 2, 3], depth=0.1, first_run=run, last_run=run)
    ClashSighting.objects.create(run=run, clash=clash, status="new", point=[1, 2, 3], depth=0.1)
    return run, clash


@pytest.fixture
def two_teams():
    """Tower (olga owns, ed edits, rita reviews, vic views) and Annex (anna owns, with models of its own); each project
    has a done run of a test named "t" with one clash."""
    tower, tower_models = project_with_models("Tower", models=2)
    annex, annex_models = project_with_models("Annex", models=2)
    people = {role: person(name) for role, name in (("owner", "olga"), ("editor", "ed"), ("reviewer", "rita"), ("viewer", "vic"))}
    for role, user in people.items():
        ProjectMember.objects.create(project=tower, user=user, role=role)
    people["annex-owner"] = person("anna")
    ProjectMember.objects.create(project=annex, user=people["annex-owner"], role="owner")
    people["guest"] = person("gus", "guest")
    ProjectMember.objects.create(project=tower, user=people["guest"], role="viewer")
    tower_run, tower_clash = seen(tower, tower_models)
    annex_run, annex_clash = seen(annex, annex_models, guids=("h1", "h2"))
    return {"tower": tower, "annex": annex, "tower_models": tower_models, "annex_models": annex_models, "people": people,
            "tower_run": tower_run, "tower_clash": tower_clash, "annex_run": annex_run, "annex_clash": annex_clash}


def code_of(response) -> int:
    return response.json()["code"]


# --- another project's ids under a project the caller may use -------------------------------------------------------


def test_a_run_and_a_clash_of_another_project_are_not_found_under_ones_own_project(two_teams):
    t = two_teams
    rita = signed_in(t["people"]["reviewer"])
    tower_runs = f"{clash_tests_at(t['tower'])}/t/runs"
    annex_run, annex_clash = t["annex_run"], t["annex_clash"]
    error(rita.get(f"{tower_runs}/{annex_run.id}"), 404, 40400)
    error(rita.get(f"{tower_runs}/{annex_run.id}/clashes"), 404, 40400)
    error(post(rita, f"{tower_runs}/{annex_run.id}/cancel", {}), 404, 40400)
    error(post(rita, f"{tower_runs}/{annex_run.id}/issues", {}), 404, 40400)
    error(rita.get(f"{tower_runs}/{annex_run.id}/report.bcfzip"), 404, 40400)
    error(post(rita, f"{tower_runs}/{annex_run.id}/clashes/{annex_clash.id}", {"reviewStatus": "approved"}, method="patch"), 404, 40400)
    error(post(rita, f"{tower_runs}/{t['tower_run'].id}/clashes/{annex_clash.id}", {"reviewStatus": "approved"}, method="patch"), 404, 40400)
    annex_clash.refresh_from_db()
    assert annex_clash.review_status == ""


def test_an_outsider_reaches_no_route_of_a_project_and_learns_nothing(two_teams):
    t = two_teams
    anna = signed_in(t["people"]["annex-owner"])
    tower = t["tower"]
    run_url = f"{clash_tests_at(tower)}/t/runs/{t['tower_run'].id}"
    for method, path, body in (
        ("get", clash_tests_at(tower), None), ("get", f"{clash_tests_at(tower)}/t", None), ("put", f"{clash_tests_at(tower)}/t2", {"a": {"models": []}}),
        ("delete", f"{clash_tests_at(tower)}/t", None), ("get", f"{clash_tests_at(tower)}/t/runs", None), ("post", f"{clash_tests_at(tower)}/t/runs", {}),
        ("get", run_url, None), ("get", f"{run_url}/clashes", None), ("post", f"{run_url}/cancel", {}), ("post", f"{run_url}/issues", {}),
        ("get", f"{run_url}/report.bcfzip", None), ("patch", f"{run_url}/clashes/{t['tower_clash'].id}", {"reviewStatus": "approved"}),
        ("get", f"/api/v1/projects/{tower.id}/federation", None),
        ("get", f"{clash_tests_at(tower)}/nope", None),  # an unknown test of a hidden project: the same answer as a known one
    ):
        response = post(anna, path, body, method=method) if body is not None else getattr(anna, method)(path)
        assert (response.status_code, code_of(response)) == (404, 40400), (method, path, response.content[:200])
    assert ClashTest.objects.filter(project=tower).count() == 1
    assert not Issue.objects.exists()


def test_a_clash_cannot_be_assigned_to_someone_outside_the_project(two_teams):
    t = two_teams
    rita = signed_in(t["people"]["reviewer"])
    url = f"{clash_tests_at(t['tower'])}/t/runs/{t['tower_run'].id}/clashes/{t['tower_clash'].id}"
    assert error(post(rita, url, {"assignedTo": "anna"}, method="patch"), 400, 40001).startswith("assignedTo:")
    assert ok(post(rita, url, {"assignedTo": "vic"}, method="patch"))["assignedTo"] == "vic"


def test_a_test_cannot_name_a_model_of_another_project_nor_of_no_project(two_teams):
    t = two_teams
    ed = signed_in(t["people"]["editor"])
    loose = IfcModel.objects.create(name="loose.ifc", status="ready", uploaded_by=t["people"]["editor"])
    for model in (t["annex_models"][0], loose):
        body = {"a": {"models": [t["tower_models"][0].id]}, "b": {"models": [model.id]}}
        assert error(post(ed, f"{clash_tests_at(t['tower'])}/x", body, method="put"), 400, 40001).startswith("b.models:")
    assert not ClashTest.objects.filter(name="x").exists()


# --- roles that may not -----------------------------------------------------------------------------------------


def test_read_only_callers_change_nothing_in_clash_tests(two_teams):
    t = two_teams
    tower = t["tower"]
    run_url = f"{clash_tests_at(tower)}/t/runs/{t['tower_run'].id}"
    clash_url = f"{run_url}/clashes/{t['tower_clash'].id}"
    definition = {"a": {"models": [t["tower_models"][0].id]}}
    readers = {
        "viewer": signed_in(t["people"]["viewer"]),
        "guest viewer": signed_in(t["people"]["guest"]),
        "owner's read token": bearer(token_of("olga", "read")["token"]),
        "share link": share_link_client(tower),
    }
    for who, client in readers.items():
        ok(client.get(f"{run_url}/clashes")) if who != "share link" else None
        for method, path, body in (("put", f"{clash_tests_at(tower)}/t2", definition), ("delete", f"{clash_tests_at(tower)}/t", None),
                                   ("post", f"{clash_tests_at(tower)}/t/runs", {}), ("post", f"{run_url}/cancel", {}),
                                   ("post", f"{run_url}/issues", {}), ("patch", clash_url, {"reviewStatus": "approved"})):
            response = post(client, path, body, method=method) if body is not None else getattr(client, method)(path)
            assert response.status_code in (403, 404), (who, method, path, response.status_code)
    assert ClashTest.objects.filter(project=tower).count() == 1
    assert not Issue.objects.exists() and not ClashRun.objects.filter(status="queued").exists()
    assert Clash.objects.get(pk=t["tower_clash"].id).review_status == ""


def test_a_reviewer_may_not_define_or_delete_tests_and_a_viewer_may_not_review(two_teams):
    t = two_teams
    rita, vic = signed_in(t["people"]["reviewer"]), signed_in(t["people"]["viewer"])
    error(post(rita, f"{clash_tests_at(t['tower'])}/t", {"a": {"models": [t["tower_models"][0].id]}}, method="put"), 403, 40300)
    error(rita.delete(f"{clash_tests_at(t['tower'])}/t"), 403, 40300)
    url = f"{clash_tests_at(t['tower'])}/t/runs/{t['tower_run'].id}/clashes/{t['tower_clash'].id}"
    error(post(vic, url, {"assignedTo": "vic"}, method="patch"), 403, 40300)


# --- models in a project ------------------------------------------------------------------------------------------


def test_an_editor_of_one_project_cannot_take_its_model_out_through_another_projects_url(two_teams):
    t = two_teams
    anna = signed_in(t["people"]["annex-owner"])
    tower_model = t["tower_models"][0]
    error(anna.delete(f"/api/v1/projects/{t['annex'].id}/models/{tower_model.id}"), 404, 40400)
    assert ProjectModel.objects.filter(model=tower_model, project=t["tower"]).exists()


def test_a_model_cannot_be_pushed_into_a_project_the_caller_only_views(two_teams):
    t = two_teams
    vic = t["people"]["viewer"]
    own = IfcModel.objects.create(name="mine.ifc", status="ready", uploaded_by=vic)
    error(post(signed_in(vic), f"/api/v1/projects/{t['tower'].id}/models/{own.id}", {"discipline": "ARC"}, method="put"), 403, 40300)
    error(post(signed_in(vic), f"/api/v1/projects/{t['annex'].id}/models/{own.id}", {}, method="put"), 404, 40400)
    assert not ProjectModel.objects.filter(model=own).exists()


def test_a_project_member_cannot_take_a_model_of_another_project_into_theirs(two_teams):
    t = two_teams
    olga = signed_in(t["people"]["owner"])
    annex_model = t["annex_models"][0]
    response = post(olga, f"/api/v1/projects/{t['tower'].id}/models/{annex_model.id}", {}, method="put")
    assert (response.status_code, code_of(response)) == (404, 40400), response.content  # the model is hidden from olga
    assert ProjectModel.objects.get(model=annex_model).project_id == t["annex"].id


@pytest.mark.parametrize("discipline", [7, ["ARC"], "x" * 33, None])
def test_a_bad_discipline_is_refused(two_teams, discipline):
    t = two_teams
    olga = signed_in(t["people"]["owner"])
    model = t["tower_models"][0]
    response = post(olga, f"/api/v1/projects/{t['tower'].id}/models/{model.id}", {"discipline": discipline}, method="put")
    assert error(response, 400, 40001).startswith("discipline")
    assert ProjectModel.objects.get(model=model).discipline == ""


def upload(client: Client, project_id: str, discipline: str = ""):
    handle = io.BytesIO(b"ISO-10303-21;\nEND-ISO-10303-21;\n")
    handle.name = "probe.ifc"
    form = {"file": handle, "projectId": project_id}
    if discipline:
        form["discipline"] = discipline
    return client.post("/api/v1/models", form)


def test_an_upload_into_a_project_needs_edit_there(two_teams):
    t = two_teams
    tower = t["tower"]
    before = IfcModel.objects.count()
    for client in (signed_in(t["people"]["viewer"]), signed_in(t["people"]["reviewer"])):
        error(upload(client, tower.id), 403, 40300)
    response = upload(bearer(token_of("olga", "read")["token"]), tower.id)
    assert response.status_code in (403, 404), response.content
    response = upload(share_link_client(tower), tower.id)
    assert response.status_code in (401, 403, 404), response.content
    error(upload(signed_in(t["people"]["annex-owner"]), tower.id), 404, 40400)
    assert IfcModel.objects.count() == before


def test_an_upload_naming_a_hidden_project_answers_as_one_that_does_not_exist(two_teams):
    """What a caller may not see answers as if it did not exist (docs/security/roles.md): an outsider's upload naming
    a project they are not in must not tell it apart from a made-up project id."""
    t = two_teams
    anna = signed_in(t["people"]["annex-owner"])
    hidden, unknown = upload(anna, t["tower"].id), upload(anna, "p_0000000000000000")
    assert (hidden.status_code, code_of(hidden)) == (unknown.status_code, code_of(unknown)), (hidden.content, unknown.content)


# --- bad input ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tolerance", ["NaN", "nan", "inf", "-inf", "Infinity", "1e400", True, [], {}, "0.01; DROP"])
def test_a_tolerance_that_is_no_finite_number_is_refused(two_teams, tolerance):
    t = two_teams
    ed = signed_in(t["people"]["editor"])
    body = {"a": {"models": [t["tower_models"][0].id]}, "tolerance": tolerance}
    assert error(post(ed, f"{clash_tests_at(t['tower'])}/x", body, method="put"), 400, 40001).startswith("tolerance")
    body = {"a": {"models": [t["tower_models"][0].id]}, "type": "clearance", "distance": tolerance}
    assert error(post(ed, f"{clash_tests_at(t['tower'])}/x", body, method="put"), 400, 40001).startswith("distance")
    assert not ClashTest.objects.filter(name="x").exists()


def test_a_bare_nan_in_the_json_is_refused(two_teams):
    t = two_teams
    ed = signed_in(t["people"]["editor"])
    body = '{"a": {"models": ["%s"]}, "tolerance": NaN}' % t["tower_models"][0].id
    response = post(ed, f"{clash_tests_at(t['tower'])}/x", body, method="put")
    assert (response.status_code, code_of(response)) == (400, 40001), response.content
    assert not ClashTest.objects.filter(name="x").exists()


@pytest.mark.parametrize("body", ["{", "[]", "null", '"a"', b"\xff\xfe", '{"a": {"models": ["m"]}} trailing'])
def test_malformed_bodies_are_40001(two_teams, body):
    t = two_teams
    ed = signed_in(t["people"]["editor"])
    response = post(ed, f"{clash_tests_at(t['tower'])}/x", body, method="put")
    assert (response.status_code, code_of(response)) == (400, 40001), response.content


@pytest.mark.parametrize("name", ["a..b", "x" * 10_000, "a b", "ä", "a%2Fb", "%2e%2e", "..", "a\\b", "a\x00b", "con"])
def test_odd_test_names_are_refused_or_routed_nowhere(two_teams, name):
    t = two_teams
    ed = signed_in(t["people"]["editor"])
    response = post(ed, f"{clash_tests_at(t['tower'])}/{name}", {"a": {"models": [t["tower_models"][0].id]}}, method="put")
    if response.status_code == 200:  # only names of the rule may be written
        assert name in ("a..b", "con")
    else:
        assert response.status_code in (400, 404), (name, response.status_code, response.content[:200])
    for test in ClashTest.objects.all():
        assert "/" not in test.name and "\\" not in test.name and len(test.name) <= 64 and test.name not in ("..", ".")


def test_an_encoded_slash_does_not_reach_a_test_of_another_project(two_teams):
    t = two_teams
    rita = signed_in(t["people"]["reviewer"])
    tricky = f"/api/v1/projects/{t['tower'].id}/clash-tests/..%2F..%2F{t['annex'].id}%2Fclash-tests%2Ft"
    response = rita.get(tricky)
    assert response.status_code == 404, response.content[:200]
    response = rita.get(f"/api/v1/projects/{t['tower'].id}/..%2F{t['annex'].id}/clash-tests")
    assert response.status_code == 404, response.content[:200]


def test_a_huge_class_list_is_refused_quickly_and_writes_nothing(two_teams):
    import time

    t = two_teams
    ed = signed_in(t["people"]["editor"])
    classes = [f"IfcNope{index}" for index in range(100_000)]
    started = time.monotonic()
    response = post(ed, f"{clash_tests_at(t['tower'])}/x", {"a": {"models": [t["tower_models"][0].id], "classes": classes}}, method="put")
    assert time.monotonic() - started < 10
    assert response.status_code in (400, 413), response.content[:200]
    classes = ["IfcWall"] * 100_000 + ["IfcBeam"]
    response = post(ed, f"{clash_tests_at(t['tower'])}/y", {"a": {"models": [t["tower_models"][0].id], "classes": classes}}, method="put")
    assert time.monotonic() - started < 20
    if response.status_code == 200:
        assert ClashTest.objects.get(name="y").a["classes"] == ["IfcWall", "IfcBeam"]


def test_a_proximity_grouping_wider_than_the_site_stays_cheap():
    """GET .../clashes?group=by-proximity:1e9 (view) asked cKDTree.query_pairs for every pair of clashes, then sorted
    them in Python: n^2/2 tuples (5,000 clashes: 12.5 M pairs, gigabytes and many seconds) for one viewer's GET."""
    import tracemalloc

    import numpy as np

    from coordination_app.engine import grouping

    rng = np.random.default_rng(1)
    rows = [{"clashId": f"c_{index:016x}", "point": list(point), "a": {}, "b": {}} for index, point in enumerate(rng.uniform(0, 50, (4000, 3)))]
    tracemalloc.start()
    found = grouping.group(rows, "by-proximity:1000000000")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(set(found.values())) == 1
    assert peak < 64 << 20, f"grouping 4,000 clashes in one chain took {peak >> 20} MB"


def test_huge_query_strings_and_bad_filters_are_40001(two_teams):
    t = two_teams
    vic = signed_in(t["people"]["viewer"])
    run_url = f"{clash_tests_at(t['tower'])}/t/runs/{t['tower_run'].id}"
    for query in ({"status": "x" * 100_000}, {"group": "by-proximity:nan"}, {"group": "by-proximity:-inf"}, {"group": "storey" * 10_000}):
        response = vic.get(f"{run_url}/clashes", query)
        assert (response.status_code, code_of(response)) == (400, 40001), (list(query), response.content[:200])


# --- pinning and reports over a model that left the project -------------------------------------------------------


def test_pinning_an_old_run_does_not_write_issues_into_a_model_that_moved_to_another_project(two_teams):
    """A done run's clashes name their models; a model taken out of Tower and put into Annex is Annex's now. Rita, a
    reviewer of Tower only, pinned the old run: the issue was created in Annex's model, where she has no role."""
    t = two_teams
    moved = t["tower_models"][0]
    ProjectModel.objects.filter(model=moved).update(project=t["annex"])
    rita = signed_in(t["people"]["reviewer"])
    response = post(rita, f"{clash_tests_at(t['tower'])}/t/runs/{t['tower_run'].id}/issues", {})
    assert not Issue.objects.filter(model=moved).exists(), f"a reviewer of Tower wrote an issue into Annex's model: {response.content[:300]}"
    assert response.status_code in (400, 409), response.content[:300]


def test_the_federation_lists_only_the_projects_own_models(two_teams):
    t = two_teams
    answer = ok(signed_in(t["people"]["viewer"]).get(f"/api/v1/projects/{t['tower'].id}/federation"))
    assert {entry["modelId"] for entry in answer["models"]} == {model.id for model in t["tower_models"]}


# --- cross-site requests and routing headers ----------------------------------------------------------------------


def test_a_session_without_the_csrf_token_changes_nothing(two_teams):
    t = two_teams
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(t["people"]["editor"])
    response = browser.put(f"{clash_tests_at(t['tower'])}/x", json.dumps({"a": {"models": [t["tower_models"][0].id]}}), content_type="application/json",
                           headers={"Origin": "https://evil.example"})
    assert (response.status_code, code_of(response)) == (403, 40300), response.content
    response = browser.delete(f"{clash_tests_at(t['tower'])}/t", headers={"Origin": "https://evil.example"})
    assert response.status_code == 403
    assert list(ClashTest.objects.filter(project=t["tower"]).values_list("name", flat=True)) == ["t"]


def test_a_query_string_of_thousands_of_fields_is_40001_not_500(two_teams):
    """Django refuses more than DATA_UPLOAD_MAX_NUMBER_FIELDS (TooManyFieldsSent) when the view reads the query;
    the envelope's handler answered it as an unhandled error (500)."""
    from urllib.parse import urlencode

    t = two_teams
    run_url = f"{clash_tests_at(t['tower'])}/t/runs/{t['tower_run'].id}"
    response = signed_in(t["people"]["viewer"]).get(f"{run_url}/clashes?" + urlencode({f"p{index}": "x" for index in range(5000)}))
    assert (response.status_code, code_of(response)) == (400, 40001), response.content[:200]


def test_a_new_run_over_a_model_that_left_the_project_is_refused(two_teams):
    t = two_teams
    ProjectModel.objects.filter(model=t["tower_models"][0]).update(project=t["annex"])
    rita = signed_in(t["people"]["reviewer"])
    error(post(rita, f"{clash_tests_at(t['tower'])}/t/runs", {}), 409, 40900)
    assert not ClashRun.objects.filter(status="queued").exists()


def test_the_report_of_an_old_run_tells_nothing_of_a_model_now_in_another_project(two_teams):
    """report.bcfzip names each model of the run by its current name (and bounds its elements by its current files):
    after the model moved to Annex and Annex renamed it, a viewer of Tower read Annex's name for it."""
    import zipfile

    t = two_teams
    moved = t["tower_models"][0]
    ProjectModel.objects.filter(model=moved).update(project=t["annex"])
    IfcModel.objects.filter(pk=moved.pk).update(name="annex-secret-tender.ifc")
    response = signed_in(t["people"]["viewer"]).get(f"{clash_tests_at(t['tower'])}/t/runs/{t['tower_run'].id}/report.bcfzip")
    if response.status_code == 200:
        archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
        text = b"".join(archive.read(name) for name in archive.namelist())
        assert b"annex-secret-tender" not in text, "the report names a model of another project by its current name"
    else:
        assert response.status_code == 409, response.content[:200]


@pytest.mark.parametrize("method, tail", [("POST", "t/runs"), ("PUT", "x"), ("DELETE", "t"), ("PATCH", "t/runs/r_0000000000000000/clashes/c_0000000000000000")])
def test_the_edge_refuses_a_cross_site_change_of_clash_tests_before_the_body(two_teams, method, tail):
    """A page of another site may send a simple POST with the session cookie; the gateway's edge refuses any change
    from an Origin that is neither its own nor in corsOrigins (viewer_gateway/edge.py), before a body byte is read."""
    from serving.http_server import RequestHead
    from viewer_gateway.server import header_check

    path = f"{clash_tests_at(two_teams['tower'])}/{tail}"
    head = RequestHead(method, path, {"host": "testserver", "origin": "https://evil.example", "content-type": "text/plain",
                                      "cookie": "sessionid=x", "content-length": "2"}, "127.0.0.1", "http")
    assert header_check(head) is not None, f"the edge let a cross-site {method} {path} through"
    head = RequestHead(method, path, {"host": "testserver", "origin": "null", "content-type": "text/plain", "content-length": "2"}, "127.0.0.1", "http")
    assert header_check(head) is not None, "an opaque origin (sandboxed iframe) was let through"


def test_a_model_list_of_100k_ids_is_refused_quickly(two_teams):
    import time

    t = two_teams
    ed = signed_in(t["people"]["editor"])
    started = time.monotonic()
    body = {"a": {"models": [f"m_{index:016x}" for index in range(100_000)]}}
    response = post(ed, f"{clash_tests_at(t['tower'])}/x", body, method="put")
    assert response.status_code in (400, 413), response.content[:200]
    body = {"a": {"models": [t["tower_models"][0].id] * 100_000}}
    response = post(ed, f"{clash_tests_at(t['tower'])}/y", body, method="put")
    assert response.status_code in (200, 400, 413), response.content[:200]
    assert time.monotonic() - started < 20
