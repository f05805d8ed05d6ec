"""The audit trail (docs/security/audit.md): who did what, when, from where, kept after the object is gone; read by a
project's owners and by server admins through the API, and in the admin (read only)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from rest_framework.test import APIClient

from accounts_app.audit import audit_record
from accounts_app.models import Account, ApiToken, AuditEvent, ProjectMember
from accounts_app.secrets import TOKEN_PREFIX, new_secret, sha256
from api.principal import Principal, Via
from models_app import services
from models_app.models import IfcModel, Project, ProjectModel
from models_app.storage import model_dir
from tests.helpers import MINIMAL_IFC, ok

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

OWNERS_ADDRESS = "203.0.113.7"


@pytest.fixture
def world():
    """A project with one model in it; olga owns it, rita reviews it, otto is a user outside it, ada is an admin."""
    project = Project.objects.create(title="Tower", kind="ifc")
    model = IfcModel.objects.create(name="tower.ifc", status="ready")
    ProjectModel.objects.create(project=project, model=model)
    model_dir(model.id).mkdir(parents=True)
    (model_dir(model.id) / "model.ifc").write_text("ISO-10303-21;")
    users = {}
    for username, server_role, project_role in [("olga", "user", "owner"), ("rita", "user", "reviewer"), ("otto", "user", None), ("ada", "admin", None)]:
        user = get_user_model().objects.create_user(username, password="not-used-here", is_superuser=server_role == "admin", is_staff=server_role == "admin")
        Account.objects.create(user=user, role=server_role)
        if project_role:
            ProjectMember.objects.create(project=project, user=user, role=project_role)
        users[username] = user
    return {"project": project, "model": model, "users": users}


def signed_in(user) -> APIClient:
    client = APIClient(REMOTE_ADDR=OWNERS_ADDRESS)
    client.force_login(user)
    return client


@pytest.fixture
def clients(world) -> dict[str, APIClient]:
    return {username: signed_in(user) for username, user in world["users"].items()}


def events(client, path, **query):
    return ok(client.get(path, query))


def test_the_project_audit_keeps_a_deletion_after_the_model_is_purged(world):
    project, model = world["project"], world["model"]
    olga = signed_in(world["users"]["olga"])
    ok(olga.delete(f"/api/v1/models/{model.id}"))
    ok(olga.delete(f"/api/v1/trash/{model.id}"))
    assert not IfcModel.with_trashed.filter(pk=model.id).exists()

    purge, deletion = events(olga, f"/api/v1/projects/{project.id}/audit")
    assert {k: deletion[k] for k in ("username", "via", "action", "object", "ip", "projectId")} == {
        "username": "olga", "via": "session", "action": "model.delete", "object": f"model:{model.id}", "ip": OWNERS_ADDRESS, "projectId": project.id,
    }
    assert deletion["detail"] == {"name": "tower.ifc"}
    assert (purge["action"], purge["object"], purge["username"], purge["projectId"]) == ("trash.purge", f"model:{model.id}", "olga", project.id)
    assert purge["at"] >= deletion["at"]


def test_a_restore_and_a_project_deletion_are_recorded(world):
    project, model = world["project"], world["model"]
    olga = signed_in(world["users"]["olga"])
    ok(olga.delete(f"/api/v1/models/{model.id}"))
    ok(olga.post(f"/api/v1/trash/{model.id}/restore"))
    ok(olga.delete(f"/api/v1/chat/projects/{project.id}"))
    ada = signed_in(world["users"]["ada"])
    recorded = events(ada, "/api/v1/audit", project=project.id)
    assert [(e["action"], e["object"]) for e in recorded] == [
        ("project.delete", f"project:{project.id}"), ("trash.restore", f"model:{model.id}"), ("model.delete", f"model:{model.id}"),
    ]
    assert recorded[0]["detail"] == {"title": "Tower", "models": [model.id]}


def test_only_owners_read_a_project_audit_and_only_admins_the_whole_trail(world, clients):
    project_path = f"/api/v1/projects/{world['project'].id}/audit"
    audit_record(Principal("olga", address=OWNERS_ADDRESS, via=Via.SESSION), "model.delete", object="model:m_x", project_id=world["project"].id)
    assert clients["rita"].get(project_path).json()["code"] == 40300
    assert clients["otto"].get(project_path).json()["code"] == 40400
    assert clients["olga"].get("/api/v1/audit").json()["code"] == 40300
    assert APIClient().get("/api/v1/audit").json()["code"] == 40100
    assert [e["object"] for e in events(clients["olga"], project_path)] == ["model:m_x"]
    assert [e["object"] for e in events(clients["ada"], project_path)] == ["model:m_x"]
    everything = events(clients["ada"], "/api/v1/audit")
    assert {("model.delete", "olga"), ("sign-in", "rita")} <= {(e["action"], e["username"]) for e in everything}


@pytest.fixture
def trail(world, clients):
    """Five events an hour apart (oldest first), three in the project; nothing else (the clients' sign-ins went)."""
    AuditEvent.objects.all().delete()
    pid = world["project"].id
    olga, rita = (Principal(name, address=OWNERS_ADDRESS, via=Via.SESSION) for name in ("olga", "rita"))
    recorded = [
        audit_record(olga, "model.upload", object="model:m_1", project_id=pid),
        audit_record(rita, "token.use", object="token:tok_1"),
        audit_record(olga, "model.delete", object="model:m_1", project_id=pid),
        audit_record(rita, "model.download", object="model:m_2", project_id=pid),
        audit_record(olga, "trash.purge", object="model:m_1"),
    ]
    start = timezone.now() - timedelta(hours=10)
    for hours, event in enumerate(recorded):
        AuditEvent.objects.filter(pk=event.pk).update(at=start + timedelta(hours=hours))
    return [AuditEvent.objects.get(pk=e.pk) for e in recorded]


def test_filters_and_pages(world, clients, trail):
    ada, olga = clients["ada"], clients["olga"]
    project_path = f"/api/v1/projects/{world['project'].id}/audit"

    def actions(client, path, **query):
        return [e["action"] for e in events(client, path, **query)]

    assert actions(ada, "/api/v1/audit") == ["trash.purge", "model.download", "model.delete", "token.use", "model.upload"]
    assert actions(olga, project_path) == ["model.download", "model.delete", "model.upload"]
    assert actions(olga, project_path, user="olga") == ["model.delete", "model.upload"]
    assert actions(ada, "/api/v1/audit", action="model.delete") == ["model.delete"]
    assert actions(ada, "/api/v1/audit", action="model") == ["model.download", "model.delete", "model.upload"]
    assert actions(ada, "/api/v1/audit", since=trail[2].at.isoformat().replace("+00:00", "Z")) == ["trash.purge", "model.download", "model.delete"]
    assert actions(ada, "/api/v1/audit", project=world["project"].id, user="rita") == ["model.download"]
    assert actions(olga, project_path, project="p_other") == ["model.download", "model.delete", "model.upload"]  # no such filter for owners

    first = events(ada, "/api/v1/audit", limit=2)
    second = events(ada, "/api/v1/audit", limit=2, before=first[-1]["id"])
    third = events(ada, "/api/v1/audit", limit=2, before=second[-1]["id"])
    assert [e["id"] for e in first + second + third] == [e.pk for e in reversed(trail)]
    assert actions(ada, "/api/v1/audit", before=trail[1].at.isoformat().replace("+00:00", "Z")) == ["model.upload"]


@pytest.mark.parametrize(("query", "named"), [
    ({"since": "yesterday"}, "since"), ({"before": "last week"}, "before"), ({"limit": 1001}, "limit"), ({"limit": 0}, "limit"),
])
def test_a_query_that_does_not_parse_is_refused_naming_the_parameter(clients, query, named):
    body = clients["ada"].get("/api/v1/audit", query).json()
    assert body["code"] == 40001
    assert body["message"].startswith(f"{named}:"), body


def test_the_admin_lists_events_and_refuses_to_add_change_or_delete(clients, trail):
    admin = clients["ada"]
    listed = admin.get("/admin/accounts/auditevent/")
    assert listed.status_code == 200
    assert "model:m_2" in listed.content.decode() and "token:tok_1" in listed.content.decode()
    filtered = admin.get("/admin/accounts/auditevent/", {"action__exact": "token.use"}).content.decode()
    assert "token:tok_1" in filtered and "model:m_2" not in filtered
    searched = admin.get("/admin/accounts/auditevent/", {"q": "m_2"}).content.decode()
    assert "model:m_2" in searched and "token:tok_1" not in searched
    assert admin.get("/admin/accounts/auditevent/add/").status_code == 403
    event = trail[0]
    assert admin.get(f"/admin/accounts/auditevent/{event.pk}/change/").status_code == 200  # shown, read only
    assert admin.post(f"/admin/accounts/auditevent/{event.pk}/change/", {"username": "someone"}).status_code == 403
    assert admin.post(f"/admin/accounts/auditevent/{event.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AuditEvent.objects.get(pk=event.pk).username == "olga"


def _upload(name: str):
    from django.core.files.uploadedfile import TemporaryUploadedFile

    upload = TemporaryUploadedFile(name, "application/octet-stream", len(MINIMAL_IFC), None)
    upload.write(MINIMAL_IFC)
    upload.flush()
    return upload


def test_uploads_and_revisions_are_recorded(world):
    from models_app import revision_services

    olga = Principal("olga", address=OWNERS_ADDRESS, via=Via.TOKEN)
    model = services.model_upload(uploaded_file=_upload("house.ifc"), by=olga)
    revision = revision_services.model_revision_upload(model_id=world["model"].id, uploaded_file=_upload("tower-2.ifc"), author="olga", by=olga)
    assert [(e.action, e.object, e.project_id, e.detail, e.username, e.via, e.ip) for e in AuditEvent.objects.all()] == [
        ("model.revision", f"model:{world['model'].id}", world["project"].id, {"version": revision.version, "name": "tower-2.ifc"}, "olga", "token", OWNERS_ADDRESS),
        ("model.upload", f"model:{model.id}", "", {"name": "house.ifc", "size": len(MINIMAL_IFC)}, "olga", "token", OWNERS_ADDRESS),
    ]


def _token(user) -> str:
    secret = new_secret(TOKEN_PREFIX)
    ApiToken.objects.create(user=user, name="ci", scope="read", secret_sha256=sha256(secret))
    return secret


def test_a_token_is_recorded_when_its_last_use_is_and_a_failed_one_always(world):
    token = APIClient(REMOTE_ADDR=OWNERS_ADDRESS, HTTP_AUTHORIZATION=f"Bearer {_token(world['users']['olga'])}")
    ok(token.get("/api/v1/models"))
    ok(token.get("/api/v1/models"))  # within the minute: last use not written again, nor recorded
    ApiToken.objects.update(last_used_at=timezone.now() - timedelta(minutes=2))
    ok(token.get("/api/v1/models"))
    token_id = ApiToken.objects.get().id
    assert [(e.action, e.username, e.via, e.object, e.ip) for e in AuditEvent.objects.filter(action="token.use")] == [
        ("token.use", "olga", "token", f"token:{token_id}", OWNERS_ADDRESS)] * 2

    wrong = APIClient(REMOTE_ADDR="198.51.100.9", HTTP_AUTHORIZATION=f"Bearer {TOKEN_PREFIX}not-a-token")
    assert wrong.get("/api/v1/models").json()["code"] == 40100
    failed = AuditEvent.objects.get(action="token.failed")
    assert (failed.ip, failed.detail) == ("198.51.100.9", {"reason": "invalid bearer token", "route": "model-list"})


def test_a_download_and_an_upload_through_the_api_are_recorded(world, clients):
    model, olga = world["model"], clients["olga"]
    assert olga.get(f"/api/v1/models/{model.id}/download").status_code == 200
    [download] = events(olga, f"/api/v1/projects/{world['project'].id}/audit", action="model.download")
    assert (download["object"], download["username"], download["ip"], download["detail"]) == (f"model:{model.id}", "olga", OWNERS_ADDRESS, {"file": "model.ifc"})

    uploaded = ok(olga.post("/api/v1/models", {"file": SimpleUploadedFile("house.ifc", MINIMAL_IFC)}, format="multipart"))
    upload = AuditEvent.objects.get(action="model.upload")
    assert (upload.object, upload.username, upload.via) == (f"model:{uploaded['id']}", "olga", "session")
