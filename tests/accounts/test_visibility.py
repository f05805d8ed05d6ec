"""Lists show what the caller may see, and whoever creates a project owns it."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from accounts_app.models import Account, ProjectMember
from chat_app.models import ChatSession
from models_app.models import Deletion, IfcModel, Project, ProjectModel

pytestmark = pytest.mark.django_db


def signed_in(username: str, role: str = "user") -> tuple[APIClient, object]:
    user = get_user_model().objects.create_user(username, password="unused-password-1")
    Account.objects.create(user=user, role=role)
    client = APIClient()
    client.force_login(user)
    return client, user


def project_with_model(title: str) -> tuple[Project, IfcModel]:
    project = Project.objects.create(title=title, kind="ifc")
    model = IfcModel.objects.create(name=f"{title}.ifc", status="ready")
    ProjectModel.objects.create(project=project, model=model)
    ChatSession.objects.create(project=project)
    return project, model


def data(response):
    body = response.json()
    assert body["code"] == 0, body
    return body["data"]


def test_the_model_list_shows_the_callers_projects_and_own_uploads_only():
    anna, anna_user = signed_in("anna")
    bert, _ = signed_in("bert")
    tower, tower_model = project_with_model("Tower")
    _, hall_model = project_with_model("Hall")
    ProjectMember.objects.create(project=tower, user=anna_user, role="viewer")
    loose = IfcModel.objects.create(name="loose.ifc", status="ready", uploaded_by=anna_user)
    assert {m["id"] for m in data(anna.get("/api/v1/models"))} == {tower_model.id, loose.id}
    assert data(bert.get("/api/v1/models")) == []
    admin, _ = signed_in("root", role="admin")
    admin_user = get_user_model().objects.get(username="root")
    admin_user.is_superuser = True
    admin_user.save()
    assert {m["id"] for m in data(admin.get("/api/v1/models"))} == {tower_model.id, hall_model.id, loose.id}


def test_sessions_are_listed_and_opened_by_the_projects_members_only():
    anna, anna_user = signed_in("anna")
    tower, _ = project_with_model("Tower")
    hall, _ = project_with_model("Hall")
    ProjectMember.objects.create(project=tower, user=anna_user, role="reviewer")
    assert [s["projectId"] for s in data(anna.get("/api/v1/chat/sessions"))] == [tower.id]
    assert anna.post("/api/v1/chat/sessions", {"projectId": hall.id}, format="json").json()["code"] == 40400
    assert data(anna.post("/api/v1/chat/sessions", {"projectId": tower.id}, format="json"))["projectId"] == tower.id
    unknown = anna.post("/api/v1/chat/sessions", {"projectId": "p_0000000000000000"}, format="json").json()
    assert unknown["code"] == 40001  # the spec's answer for a project that does not exist


def test_the_trash_lists_what_the_caller_owns():
    anna, anna_user = signed_in("anna")
    tower, tower_model = project_with_model("Tower")
    hall, _ = project_with_model("Hall")
    ProjectMember.objects.create(project=tower, user=anna_user, role="owner")
    now = timezone.now()
    for project in (tower, hall):
        Deletion.objects.create(kind="project", target_id=project.id, title=project.title, deleted_at=now, deleted_by="x", purge_at=now)
    assert [i["id"] for i in data(anna.get("/api/v1/trash"))] == [tower.id]
    ProjectMember.objects.filter(user=anna_user).update(role="editor")
    assert data(anna.get("/api/v1/trash")) == []


def test_a_guest_cannot_create_a_project_and_a_user_owns_the_one_it_creates(monkeypatch):
    guest, _ = signed_in("gus", role="guest")
    refused = guest.post("/api/v1/chat/projects", {"title": "Nope", "kind": "cad"}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == 40300
    anna, anna_user = signed_in("anna")
    created = data(anna.post("/api/v1/chat/projects", {"title": "Drawings", "kind": "cad"}, format="json"))
    assert ProjectMember.objects.get(project_id=created["projectId"]).role == "owner"
    assert ProjectMember.objects.get(project_id=created["projectId"]).user == anna_user
    assert data(anna.get(f"/api/v1/projects/{created['projectId']}/members"))[0]["username"] == "anna"


def test_an_upload_outside_a_project_belongs_to_its_uploader(monkeypatch):
    from models_app import services
    from tests.gateway.test_models_api import upload

    monkeypatch.setattr(services, "queue_conversion", lambda *args, **kwargs: None, raising=False)
    anna, anna_user = signed_in("anna")
    bert, _ = signed_in("bert")
    model_id = data(upload(anna))["id"]
    assert IfcModel.objects.get(pk=model_id).uploaded_by == anna_user
    assert [m["id"] for m in data(anna.get("/api/v1/models"))] == [model_id]
    assert bert.get(f"/api/v1/models/{model_id}").json()["code"] == 40400
    assert anna.delete(f"/api/v1/models/{model_id}").json()["code"] == 0
    guest, _ = signed_in("gus", role="guest")
    assert upload(guest).json()["code"] == 40300
