"""Signed records (issue 33, item 6): with an account the author of an issue, a comment, a change entry, a saved
version and a plan file is the caller's username, whatever the request declares, and the answers say so
(authorVerified); the operator's token keeps the spec's self-declared author. Assignees are members or marked free
text. Everything goes through the gateway's routes and its access middleware."""

from __future__ import annotations

import json

import pytest

from accounts_app.models import ProjectMember
from issues_app.models import ChangeEntry
from models_app.storage import model_dir
from tests.accounts.people import bearer, person, post, project_with_models, signed_in, token_of
from tests.plans.test_plan_files import PLAN
from tests.proxy.test_proxy_faults import SAVE_ANSWER, FakeEditService

pytestmark = pytest.mark.django_db
FORGED = "mallory"


@pytest.fixture
def site():
    """A project with one model; ana edits it, bob reviews it."""
    project, (model,) = project_with_models("Tower", models=1)
    model_dir(model.id).mkdir(parents=True)
    ana, bob = person("ana"), person("bob")
    ProjectMember.objects.create(project=project, user=ana, role="editor")
    ProjectMember.objects.create(project=project, user=bob, role="reviewer")
    return project, model


@pytest.fixture
def edit_service(viewer_config):
    service = FakeEditService()
    viewer_config(editServiceURL=service.url)
    yield service
    service.close()


def data(response) -> dict:
    body = response.json()
    assert response.status_code == 200 and body["code"] == 0, body
    return body["data"]


def pin(client, model_id: str, **fields):
    issue = {"title": "Door too narrow", "author": FORGED, **fields}
    return data(client.post(f"/api/v1/models/{model_id}/issues", {"issue": json.dumps(issue)}))


def test_an_issue_and_its_changes_are_signed_by_the_account_not_the_declared_author(site):
    _, model = site
    outsider = signed_in(person("carla"))  # no member: the model is not even visible to her
    assert outsider.post(f"/api/v1/models/{model.id}/issues", {"issue": json.dumps({"title": "x"})}).status_code == 404
    bob = signed_in(ProjectMember.objects.get(user__username="bob").user)
    issue = pin(bob, model.id)
    assert (issue["author"], issue["creationAuthor"], issue["authorVerified"]) == ("bob", "bob", True)
    assert (issue["modifiedAuthor"], issue["modifiedAuthorVerified"]) == ("", False)

    changed = data(post(bob, f"/api/v1/models/{model.id}/issues/{issue['id']}", {"status": "checking", "modifiedAuthor": FORGED}, "patch"))
    assert (changed["modifiedAuthor"], changed["modifiedAuthorVerified"], changed["author"]) == ("bob", True, "bob")
    listed = json.loads(bob.get(f"/api/v1/models/{model.id}/issues").content)["data"]
    assert [(i["author"], i["authorVerified"], i["modifiedAuthorVerified"]) for i in listed] == [("bob", True, True)]
    assert listed[0]["authorVerified"] is True  # a JSON boolean in the fast list too, not SQLite's 1


def test_a_comment_is_signed_and_moves_the_issues_modified_author(site):
    _, model = site
    bob = signed_in(ProjectMember.objects.get(user__username="bob").user)
    issue = pin(bob, model.id)
    comment = data(post(bob, f"/api/v1/models/{model.id}/issues/{issue['id']}/comments", {"text": "Needs 90 cm", "author": FORGED}))
    assert (comment["author"], comment["authorVerified"]) == ("bob", True)
    edited = data(post(bob, f"/api/v1/models/{model.id}/issues/{issue['id']}/comments/{comment['id']}",
                       {"text": "Needs 1 m", "modifiedAuthor": FORGED, "authorVerified": False}, "patch"))  # echoed read-only keys
    assert (edited["modifiedAuthor"], edited["modifiedAuthorVerified"], edited["author"]) == ("bob", True, "bob")
    thread = data(bob.get(f"/api/v1/models/{model.id}/issues/{issue['id']}/comments"))
    assert [(c["author"], c["authorVerified"]) for c in thread] == [("bob", True)]


def test_a_personal_token_signs_like_a_session(site):
    _, model = site
    token = token_of("bob")["token"]
    issue = pin(bearer(token), model.id)
    assert (issue["author"], issue["authorVerified"]) == ("bob", True)


def test_an_override_change_entry_is_signed(site):
    _, model = site
    ana = signed_in(ProjectMember.objects.get(user__username="ana").user)
    data(post(ana, f"/api/v1/models/{model.id}/entities/2O2Fr$t4X7Zf8NOew3FLOH/properties",
              {"fields": {"FireRating": "F90"}, "author": FORGED}, "put"))
    (entry,) = data(ana.get(f"/api/v1/models/{model.id}/changes"))
    assert (entry["author"], entry["authorVerified"], entry["newValue"]) == ("ana", True, "F90")


def test_a_script_save_through_the_proxy_is_signed_and_so_are_its_change_entries(site, edit_service):
    _, model = site
    ana = signed_in(ProjectMember.objects.get(user__username="ana").user)
    edit_service.body = SAVE_ANSWER
    data(post(ana, f"/api/v1/models/{model.id}/script/save", {"note": "wider door", "author": FORGED}))
    method, path, body = edit_service.received[-1]
    assert (method, path.endswith("/script/save"), json.loads(body)["author"]) == ("POST", True, "ana")
    entries = ChangeEntry.objects.filter(model=model)
    assert entries.count() == 2 and set(entries.values_list("author", "author_verified")) == {("ana", True)}


def test_a_plan_file_is_signed(site):
    project, _ = site
    ana = signed_in(ProjectMember.objects.get(user__username="ana").user)
    response = ana.put(f"/api/v1/projects/{project.id}/plan", json.dumps(PLAN), content_type="application/json", headers={"X-Author": FORGED})
    assert data(response)["version"] == "v1"
    history = data(ana.get(f"/api/v1/projects/{project.id}/plan_history"))
    assert [v["author"] for v in history["versions"]] == ["ana"]


def test_assignees_are_members_or_marked_free_text(site):
    _, model = site
    bob = signed_in(ProjectMember.objects.get(user__username="bob").user)
    to_member = pin(bob, model.id, assignedTo="ana")
    to_outsider = pin(bob, model.id, assignedTo="Carla from the contractor")
    assert (to_member["assignedTo"], to_member["assignedToMember"]) == ("ana", True)
    assert (to_outsider["assignedTo"], to_outsider["assignedToMember"]) == ("Carla from the contractor", False)
    moved = data(post(bob, f"/api/v1/models/{model.id}/issues/{to_outsider['id']}", {"assignedTo": "bob"}, "patch"))
    assert moved["assignedToMember"] is True
    listed = {i["id"]: i["assignedToMember"] for i in json.loads(bob.get(f"/api/v1/models/{model.id}/issues").content)["data"]}
    assert listed == {to_member["id"]: True, to_outsider["id"]: True}


def test_the_operators_token_keeps_the_self_declared_author(site, viewer_config):
    _, model = site
    viewer_config(apiToken="operator-secret")
    operator = bearer("operator-secret")
    issue = pin(operator, model.id)
    assert (issue["author"], issue["authorVerified"]) == (FORGED, False)
    comment = data(post(operator, f"/api/v1/models/{model.id}/issues/{issue['id']}/comments", {"text": "ok", "author": "Dana"}))
    assert (comment["author"], comment["authorVerified"]) == ("Dana", False)


def test_a_viewer_reads_whose_record_it_is(site):
    project, model = site
    viewer = person("vera")
    ProjectMember.objects.create(project=project, user=viewer, role="viewer")
    pin(signed_in(ProjectMember.objects.get(user__username="bob").user), model.id)
    listed = json.loads(signed_in(viewer).get(f"/api/v1/models/{model.id}/issues").content)["data"]
    assert [(i["author"], i["authorVerified"]) for i in listed] == [("bob", True)]
