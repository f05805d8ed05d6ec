"""Project members and share links through the real access middleware: owners manage both, a project keeps an owner,
reviewers may not, outsiders do not see the project; share link secrets are shown once and stored hashed. Also the
capabilities view (viewer_gateway/account_views.py), on a URL configuration with its route."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import path
from django.utils import timezone

from accounts_app.models import AuditEvent, ProjectMember, ShareLink
from accounts_app.roles import Capability
from accounts_app.secrets import SHARE_COOKIE, sha256
from accounts_app.services import project_owner_add
from models_app.models import IfcModel
from tests.accounts.people import bearer, error, person, post, project_with_models, signed_in, token_of
from tests.helpers import ok
from viewer_gateway import access
from viewer_gateway.account_views import CapabilitiesView
from viewer_gateway.urls import urlpatterns as gateway_urlpatterns

pytestmark = pytest.mark.django_db
# this module is also a URL configuration: the gateway's, with the capabilities route the lead adds to it
urlpatterns = [*gateway_urlpatterns, path("api/v1/auth/capabilities", CapabilitiesView.as_view(), name="auth-capabilities")]


def in_days(days: float) -> str:
    return (timezone.now() + timedelta(days=days)).isoformat()


@pytest.fixture
def team():
    """A project with two models, its owner, an editor, a reviewer and a viewer; and an outsider."""
    project, models = project_with_models("Tower", models=2)
    people = {role: person(name, display_name=name.title()) for role, name in
              (("owner", "olga"), ("editor", "ed"), ("reviewer", "rita"), ("viewer", "vic"))}
    for role, user in people.items():
        ProjectMember.objects.create(project=project, user=user, role=role)
    people["outsider"] = person("otto")
    return project, models, people


def members_of(project) -> str:
    return f"/api/v1/projects/{project.id}/members"


def links_of(project) -> str:
    return f"/api/v1/projects/{project.id}/share-links"


def test_every_member_lists_the_members(team):
    project, _, people = team
    expected = [{"username": "ed", "displayName": "Ed", "role": "editor"}, {"username": "olga", "displayName": "Olga", "role": "owner"},
                {"username": "rita", "displayName": "Rita", "role": "reviewer"}, {"username": "vic", "displayName": "Vic", "role": "viewer"}]
    for role in ("owner", "viewer"):
        assert ok(signed_in(people[role]).get(members_of(project))) == expected


def test_an_owner_adds_changes_and_removes_members_audited(team):
    project, _, people = team
    owner = signed_in(people["owner"])
    person("newbie", "guest")
    assert ok(post(owner, f"{members_of(project)}/newbie", {"role": "reviewer"}, "put")) == {"username": "newbie", "displayName": "", "role": "reviewer"}
    assert ok(post(owner, f"{members_of(project)}/newbie", {"role": "editor"}, "put"))["role"] == "editor"
    ok(post(owner, f"{members_of(project)}/newbie", {"role": "editor"}, "put"))  # unchanged: not audited again
    assert ok(owner.delete(f"{members_of(project)}/newbie")) is None
    assert not ProjectMember.objects.filter(user__username="newbie").exists()
    events = list(AuditEvent.objects.filter(project_id=project.id).order_by("id").values_list("action", "object", "detail"))
    assert events == [("member.set", "user:newbie", {"role": "reviewer", "from": None}), ("member.set", "user:newbie", {"role": "editor", "from": "reviewer"}),
                      ("member.remove", "user:newbie", {"role": "editor"})]
    error(owner.delete(f"{members_of(project)}/newbie"), 404, 40400)


def test_a_project_keeps_its_last_owner(team):
    project, _, people = team
    owner = signed_in(people["owner"])
    assert "last owner" in error(post(owner, f"{members_of(project)}/olga", {"role": "editor"}, "put"), 409, 40900)
    assert "last owner" in error(owner.delete(f"{members_of(project)}/olga"), 409, 40900)
    ok(post(owner, f"{members_of(project)}/ed", {"role": "owner"}, "put"))
    ok(post(owner, f"{members_of(project)}/olga", {"role": "viewer"}, "put"))
    assert ProjectMember.objects.get(project=project, user=people["owner"]).role == "viewer"


@pytest.mark.parametrize(("username", "body", "field"), [
    ("nobody", {"role": "viewer"}, "username"),
    ("vic", {"role": "admin"}, "role"),
    ("vic", {"role": 3}, "role"),
    ("vic", {}, "role"),
])
def test_bad_member_requests_are_40001_naming_the_field(team, username, body, field):
    project, _, people = team
    message = error(post(signed_in(people["owner"]), f"{members_of(project)}/{username}", body, "put"), 400, 40001)
    assert message.startswith(f"{field}:"), message
    assert ProjectMember.objects.get(user=people["viewer"]).role == "viewer"


@pytest.mark.parametrize("body", ["{", "[]", '"owner"'])
def test_a_member_body_that_is_no_json_object_is_40001(team, body):
    project, _, people = team
    error(post(signed_in(people["owner"]), f"{members_of(project)}/vic", body, "put"), 400, 40001)


@pytest.mark.parametrize("role", ["editor", "reviewer", "viewer"])
def test_only_owners_change_members(team, role):
    project, _, people = team
    client = signed_in(people[role])
    assert "may not own" in error(post(client, f"{members_of(project)}/vic", {"role": "owner"}, "put"), 403, 40300)
    error(client.delete(f"{members_of(project)}/vic"), 403, 40300)
    assert ProjectMember.objects.get(user=people["viewer"]).role == "viewer"


def test_an_outsider_does_not_see_the_project(team):
    project, _, people = team
    outsider = signed_in(people["outsider"])
    error(outsider.get(members_of(project)), 404, 40400)
    error(post(outsider, f"{members_of(project)}/otto", {"role": "owner"}, "put"), 404, 40400)
    error(outsider.get(links_of(project)), 404, 40400)
    error(signed_in(people["owner"]).get("/api/v1/projects/p_0000000000000000/members"), 404, 40400)


def test_a_server_admin_manages_members_of_any_project(team):
    project, _, _ = team
    root = signed_in(person("root", "admin"))
    ok(post(root, f"{members_of(project)}/otto", {"role": "viewer"}, "put"))
    assert AuditEvent.objects.get(action="member.set").username == "root"


def test_project_owner_add_makes_the_creator_owner_once(team):
    project, _, people = team
    project_owner_add(project.id, people["outsider"].pk)
    project_owner_add(project.id, people["outsider"].pk)
    assert ProjectMember.objects.get(project=project, user=people["outsider"]).role == "owner"
    project_owner_add(project.id, people["viewer"].pk)
    assert ProjectMember.objects.get(project=project, user=people["viewer"]).role == "owner"


def test_an_owner_makes_a_share_link_whose_secret_is_shown_once_and_stored_hashed(team):
    project, models, people = team
    owner = signed_in(people["owner"])
    made = ok(post(owner, links_of(project), {"expiresAt": in_days(7), "models": [models[0].id], "downloads": True}))
    assert made["url"].startswith("http://testserver/s/bms_")
    secret = made["url"].rsplit("/", 1)[1]
    assert (made["models"], made["downloads"], made["projectId"], made["createdBy"]) == ([models[0].id], True, project.id, "olga")
    link = ShareLink.objects.get(pk=made["linkId"])
    assert link.secret_sha256 == sha256(secret) and link.model_ids == [models[0].id]
    for listed in (owner.get(links_of(project)), owner.get(f"{links_of(project)}/{link.id}")):
        assert secret not in listed.content.decode() and link.secret_sha256 not in listed.content.decode() and "url" not in listed.json()["data"]
    assert ok(owner.get(links_of(project)))[0]["linkId"] == link.id
    event = AuditEvent.objects.get(action="share-link.create")
    assert (event.username, event.object, event.project_id) == ("olga", f"share-link:{link.id}", project.id)


def test_a_share_link_opens_the_project_to_someone_without_an_account_until_revoked(team):
    project, _, people = team
    owner = signed_in(people["owner"])
    made = ok(post(owner, links_of(project), {"expiresAt": in_days(1)}))
    assert made["models"] == [] and made["downloads"] is False
    visitor = Client()
    visitor.cookies[SHARE_COOKIE] = made["url"].rsplit("/", 1)[1]
    assert ok(visitor.get("/api/v1/auth/me"))["via"] == "share-link"
    assert ok(visitor.get(members_of(project)))  # reading the project: allowed
    error(visitor.get(links_of(project)), 403, 40300)
    revoked = ok(owner.delete(f"{links_of(project)}/{made['linkId']}"))
    assert revoked["revokedAt"] is not None
    error(visitor.get("/api/v1/auth/me"), 401, 40100)
    ok(owner.delete(f"{links_of(project)}/{made['linkId']}"))
    assert AuditEvent.objects.filter(action="share-link.revoke").count() == 1


@pytest.mark.parametrize(("body", "field"), [
    ({}, "expiresAt"),
    ({"expiresAt": "soon"}, "expiresAt"),
    ({"expiresAt": in_days(-1)}, "expiresAt"),
    ({"expiresAt": in_days(91)}, "expiresAt"),
    ({"expiresAt": in_days(1), "models": "m_1"}, "models"),
    ({"expiresAt": in_days(1), "models": ["m_0000000000000000"]}, "models"),
    ({"expiresAt": in_days(1), "downloads": "maybe"}, "downloads"),
])
def test_bad_share_link_requests_are_40001_naming_the_field(team, body, field):
    project, _, people = team
    message = error(post(signed_in(people["owner"]), links_of(project), body), 400, 40001)
    assert message.startswith(f"{field}:"), message
    assert not ShareLink.objects.exists()


def test_a_share_link_may_name_only_models_of_its_project(team):
    project, _, people = team
    other_project, [foreign] = project_with_models("Other", models=1)
    message = error(post(signed_in(people["owner"]), links_of(project), {"expiresAt": in_days(1), "models": [foreign.id]}), 400, 40001)
    assert foreign.id in message


def test_share_links_are_the_owners_and_found_only_under_their_project(team):
    project, _, people = team
    made = ok(post(signed_in(people["owner"]), links_of(project), {"expiresAt": in_days(1)}))
    error(post(signed_in(people["editor"]), links_of(project), {"expiresAt": in_days(1)}), 403, 40300)
    error(signed_in(people["reviewer"]).delete(f"{links_of(project)}/{made['linkId']}"), 403, 40300)
    other_project, _ = project_with_models("Other")
    ProjectMember.objects.create(project=other_project, user=people["owner"], role="owner")
    error(signed_in(people["owner"]).get(f"{links_of(other_project)}/{made['linkId']}"), 404, 40400)
    error(signed_in(people["owner"]).delete(f"{links_of(other_project)}/{made['linkId']}"), 404, 40400)
    assert ShareLink.objects.get(pk=made["linkId"]).revoked_at is None


@pytest.fixture
def capabilities_route(monkeypatch, settings):
    settings.ROOT_URLCONF = __name__
    monkeypatch.setitem(access.ROUTE_RULES, "auth-capabilities", {"GET": Capability.SIGNED_IN})


@pytest.mark.usefixtures("capabilities_route")
def test_capabilities_name_what_the_caller_may_do_there(team):
    project, models, people = team
    expected = {"owner": ["view", "review", "edit", "own", "download"], "editor": ["view", "review", "edit", "download"],
                "reviewer": ["view", "review", "download"], "viewer": ["view", "download"]}
    for role, capabilities in expected.items():
        answer = ok(signed_in(people[role]).get(f"/api/v1/auth/capabilities?model={models[0].id}"))
        assert answer == {"modelId": models[0].id, "projectId": project.id, "capabilities": capabilities}, role
    assert ok(bearer(token_of("olga", "read")["token"]).get(f"/api/v1/auth/capabilities?project={project.id}"))["capabilities"] == ["view", "download"]
    error(signed_in(people["outsider"]).get(f"/api/v1/auth/capabilities?project={project.id}"), 404, 40400)
    error(signed_in(people["owner"]).get("/api/v1/auth/capabilities?model=m_nothing"), 404, 40400)
    error(signed_in(people["owner"]).get("/api/v1/auth/capabilities"), 400, 40001)
    mine = IfcModel.objects.create(name="own.ifc", status="ready", uploaded_by=people["outsider"])
    assert "own" in ok(signed_in(people["outsider"]).get(f"/api/v1/auth/capabilities?model={mine.id}"))["capabilities"]
