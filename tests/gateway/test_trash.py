"""The trash: deleting a model or project moves it to the trash (404 everywhere), restore brings it back with its
records and files, purge removes it for good but keeps the change log and the deletion record."""

import json
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.utils import timezone

from chat_app.services import session_open
from issues_app.models import ChangeEntry, Issue, Override
from models_app import project_services, services
from models_app.models import Deletion, IfcModel
from models_app.storage import model_dir, trashed_model_dir
from tests.issues.conftest import png_bytes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

GUID = "2O2Fr$t4X7Zf8NOew3FLOH"
PLAN = {"schema": "plan/1", "title": "House", "units": "m", "storeys": [], "rooms": [], "requirements": []}


@pytest.fixture
def model():
    record = IfcModel.objects.create(name="house.ifc", status="ready")
    model_dir(record.id).mkdir(parents=True)
    (model_dir(record.id) / "model.ifc").write_text("ISO-10303-21;")
    (model_dir(record.id) / "model.xkt").write_bytes(b"xkt")
    (model_dir(record.id) / "metadata.json").write_text("{}")
    return record


@pytest.fixture
def reviewed(api, model):
    """The model with an issue (and its screenshot), an override and its change-log entry."""
    issue = {"entityId": GUID, "entityName": "Wall", "entityType": "IfcWall", "title": "Check"}
    created = api.post(f"/api/v1/models/{model.id}/issues", {"issue": json.dumps(issue), "screenshot": SimpleUploadedFile("a.png", png_bytes(), "image/png")}, format="multipart")
    assert created.json()["code"] == 0
    updated = api.put(f"/api/v1/models/{model.id}/entities/{GUID}/properties", {"entityName": "Wall", "fields": {"FireRating": "F90"}}, format="json")
    assert updated.json()["code"] == 0
    return model


def data(response):
    body = response.json()
    assert body["code"] == 0, body
    return body["data"]


def test_a_deleted_model_goes_to_the_trash_and_comes_back_with_its_records_and_files(api, reviewed):
    model_id = reviewed.id
    files = sorted(p.relative_to(model_dir(model_id)).as_posix() for p in model_dir(model_id).rglob("*"))
    assert api.delete(f"/api/v1/models/{model_id}").json() == {"code": 0, "message": "ok", "data": None}

    assert api.get(f"/api/v1/models/{model_id}").json()["code"] == 40400
    assert model_id not in [m["id"] for m in data(api.get("/api/v1/models"))]
    assert not model_dir(model_id).exists() and trashed_model_dir(model_id).is_dir()
    [item] = data(api.get("/api/v1/trash"))
    assert (item["id"], item["kind"], item["title"], item["deletedBy"]) == (model_id, "model", "house.ifc", "local-user")
    deleted_at = Deletion.objects.get().deleted_at
    assert Deletion.objects.get().purge_at - deleted_at == timedelta(days=30)

    restored = data(api.post(f"/api/v1/trash/{model_id}/restore"))
    assert (restored["id"], restored["name"], restored["status"]) == (model_id, "house.ifc", "ready")
    assert data(api.get("/api/v1/trash")) == []
    assert [i["title"] for i in data(api.get(f"/api/v1/models/{model_id}/issues"))] == ["Check"]
    assert data(api.get(f"/api/v1/models/{model_id}/overrides")) == {GUID: {"FireRating": "F90"}}
    assert [(c["field"], c["newValue"]) for c in data(api.get(f"/api/v1/models/{model_id}/changes"))] == [("FireRating", "F90")]
    assert sorted(p.relative_to(model_dir(model_id)).as_posix() for p in model_dir(model_id).rglob("*")) == files
    assert api.get(f"/v1/models/{model_id}/model.xkt").status_code == 200
    assert Deletion.objects.get().restored_by == "local-user"


TRASHED_MODEL_ROUTES = [
    ("get", ""), ("delete", ""), ("post", "/retry"), ("get", "/download"), ("get", "/issues"), ("post", "/issues"),
    ("get", "/overrides"), ("get", "/changes"), ("put", f"/entities/{GUID}/properties"), ("post", "/overrides/migrate"),
    ("get", "/script"), ("post", "/script/save"), ("get", "/edit/versions"), ("get", "/versions/v1/geometry"),
    ("get", "/checks"), ("get", "/issues.bcf"),
]
TRASHED_STATIC_ROUTES = ["model.xkt", "metadata.json", "render.json", "issues/i_0123456789ab.png", "versions/v1/model.xkt"]


def test_a_trashed_model_answers_404_on_its_routes(api, reviewed, viewer_config):
    viewer_config(editServiceURL="http://127.0.0.1:9")  # a route that reached the edit service would answer 50200
    screenshot = Issue.objects.get().screenshot
    assert api.delete(f"/api/v1/models/{reviewed.id}").json()["code"] == 0
    for method, tail in TRASHED_MODEL_ROUTES:
        kwargs = {"data": {"fields": {"Name": "x"}}, "format": "json"} if method in ("put", "post") else {}
        response = getattr(api, method)(f"/api/v1/models/{reviewed.id}{tail}", **kwargs)
        assert (response.status_code, response.json()["code"]) == (404, 40400), (method, tail, response.content[:200])
    for tail in [*TRASHED_STATIC_ROUTES, screenshot.removeprefix(f"/v1/models/{reviewed.id}/")]:
        response = api.get(f"/v1/models/{reviewed.id}/{tail}")
        assert response.status_code == 404, tail


def test_a_queued_conversion_of_a_trashed_model_does_not_run_and_resumes_on_restore(api, model, monkeypatch):
    IfcModel.objects.filter(pk=model.id).update(status=IfcModel.Status.CONVERTING, job=IfcModel.Job.QUEUED, revision=1)
    converted = []
    monkeypatch.setattr(services, "convert_ifc", lambda *args, **kwargs: converted.append(args))
    assert api.delete(f"/api/v1/models/{model.id}").json()["code"] == 0
    services.run_conversion(model.id)
    assert converted == []
    data(api.post(f"/api/v1/trash/{model.id}/restore"))
    restored = IfcModel.objects.get(pk=model.id)
    assert (restored.status, restored.job) == (IfcModel.Status.CONVERTING, IfcModel.Job.QUEUED)


def test_purge_removes_the_files_and_keeps_the_change_log_and_the_deletion_record(api, reviewed):
    model_id = reviewed.id
    assert api.delete(f"/api/v1/models/{model_id}").json()["code"] == 0
    assert api.delete(f"/api/v1/trash/{model_id}").json() == {"code": 0, "message": "ok", "data": None}
    assert not trashed_model_dir(model_id).exists() and not model_dir(model_id).exists()
    assert not IfcModel.with_trashed.filter(pk=model_id).exists()
    assert (Issue.objects.count(), Override.objects.count()) == (0, 0)
    assert list(ChangeEntry.objects.values_list("model_id", "field", "new_value")) == [(model_id, "FireRating", "F90")]
    record = Deletion.objects.get()
    assert (record.target_id, record.deleted_by, record.purged_by) == (model_id, "local-user", "local-user") and record.purged_at
    assert data(api.get("/api/v1/trash")) == []
    assert api.delete(f"/api/v1/trash/{model_id}").json()["code"] == 40400
    assert api.post(f"/api/v1/trash/{model_id}/restore").json()["code"] == 40400


@pytest.fixture
def project(api, model):
    """A cad project (built without the edit service) holding the model, with its session and a plan file."""
    created = project_services.project_create(title="House", kind="cad")
    project_services.project_add_model(created, model)
    session_open(project_id=created.id)
    assert api.put(f"/api/v1/projects/{created.id}/plan", PLAN, format="json").json()["code"] == 0
    return created


def test_a_deleted_project_goes_to_the_trash_with_its_models_and_comes_back_with_session_and_plans(api, project, model):
    session_id = data(api.get("/api/v1/chat/sessions"))[0]["chatSessionId"]
    assert api.delete(f"/api/v1/chat/projects/{project.id}").json() == {"code": 0, "message": "ok", "data": None}

    assert [(i["id"], i["kind"], i["title"]) for i in data(api.get("/api/v1/trash"))] == [(project.id, "project", "House")]
    assert api.get(f"/api/v1/models/{model.id}").json()["code"] == 40400
    assert api.get(f"/api/v1/projects/{project.id}/plan").json()["code"] == 40400
    assert data(api.get("/api/v1/chat/sessions")) == []
    assert api.get(f"/api/v1/chat/sessions/{session_id}/messages").json()["code"] == 40400
    assert api.delete(f"/api/v1/chat/projects/{project.id}").json()["code"] == 40400
    assert trashed_model_dir(model.id).is_dir()
    assert api.post(f"/api/v1/trash/{model.id}/restore").json()["code"] == 40900  # it went with the project

    restored = data(api.post(f"/api/v1/trash/{project.id}/restore"))
    assert (restored["projectId"], restored["title"], restored["models"]) == (project.id, "House", [model.id])
    assert [s["chatSessionId"] for s in data(api.get("/api/v1/chat/sessions"))] == [session_id]
    assert data(api.get(f"/api/v1/projects/{project.id}/plan"))["title"] == "House"
    assert data(api.get(f"/api/v1/models/{model.id}"))["id"] == model.id
    assert (model_dir(model.id) / "model.project").read_text() == project.id


def test_a_model_whose_project_is_in_the_trash_is_not_restored_alone(api, project, model):
    assert api.delete(f"/api/v1/models/{model.id}").json()["code"] == 0
    assert api.delete(f"/api/v1/chat/projects/{project.id}").json()["code"] == 0
    response = api.post(f"/api/v1/trash/{model.id}/restore").json()
    assert response["code"] == 40900 and project.id in response["message"]
    data(api.post(f"/api/v1/trash/{project.id}/restore"))
    assert [i["id"] for i in data(api.get("/api/v1/trash"))] == [model.id]  # still in the trash on its own
    assert data(api.post(f"/api/v1/trash/{model.id}/restore"))["id"] == model.id


def test_purging_a_project_removes_its_models_session_and_plans(api, project, model):
    from chat_app.models import ChatSession
    from plans_app.models import PlanVersion

    assert api.delete(f"/api/v1/chat/projects/{project.id}").json()["code"] == 0
    assert api.delete(f"/api/v1/trash/{project.id}").json()["code"] == 0
    assert (ChatSession.objects.count(), PlanVersion.objects.count(), IfcModel.with_trashed.count()) == (0, 0, 0)
    assert not trashed_model_dir(model.id).exists()
    assert Deletion.objects.get().model_ids == [model.id]


def test_purge_trash_honours_purge_at(api, viewer_config):
    viewer_config(trashRetentionDays=2)
    due, kept, other = (IfcModel.objects.create(name=f"{n}.ifc", status="ready") for n in ("due", "kept", "other"))
    for record in (due, kept, other):
        model_dir(record.id).mkdir()
        assert api.delete(f"/api/v1/models/{record.id}").json()["code"] == 0
    items = {i["id"]: i for i in data(api.get("/api/v1/trash"))}
    assert all(Deletion.objects.get(target_id=i).purge_at - Deletion.objects.get(target_id=i).deleted_at == timedelta(days=2) for i in items)
    Deletion.objects.filter(target_id=due.id).update(purge_at=timezone.now() - timedelta(seconds=1))

    call_command("purge_trash")
    assert sorted(i["id"] for i in data(api.get("/api/v1/trash"))) == sorted([kept.id, other.id])
    assert not trashed_model_dir(due.id).exists() and trashed_model_dir(kept.id).exists()
    call_command("purge_trash", "--id", other.id)
    assert [i["id"] for i in data(api.get("/api/v1/trash"))] == [kept.id]
    call_command("purge_trash", "--all")
    assert data(api.get("/api/v1/trash")) == [] and Deletion.objects.filter(purged_by="manage.py purge_trash").count() == 3


def test_the_deleter_is_the_token_holder_and_its_address(api, model, viewer_config):
    viewer_config(apiToken="secret-token")
    api.credentials(HTTP_AUTHORIZATION="Bearer secret-token")
    assert api.delete(f"/api/v1/models/{model.id}", REMOTE_ADDR="10.1.2.3").json()["code"] == 0
    assert data(api.get("/api/v1/trash"))[0]["deletedBy"] == "api-token"
    assert Deletion.objects.get().client_address == "10.1.2.3"


@pytest.mark.parametrize("item_id", ["m_123", "p_zzzzzzzzzzzzzzzz", "..", "m_0123456789abcdef"])
def test_unknown_or_malformed_trash_ids_are_40400(api, item_id):
    assert api.post(f"/api/v1/trash/{item_id}/restore").json()["code"] == 40400
    assert api.delete(f"/api/v1/trash/{item_id}").json()["code"] == 40400


def test_the_trash_lists_the_most_recent_deletion_first(api):
    first, second = (IfcModel.objects.create(name=f"{n}.ifc", status="ready") for n in ("first", "second"))
    for record in (first, second):
        assert api.delete(f"/api/v1/models/{record.id}").json()["code"] == 0
    assert [i["id"] for i in data(api.get("/api/v1/trash"))] == [second.id, first.id]


def test_the_retention_comes_from_the_environment_over_the_file(tmp_path):
    from viewer_gateway.config import ConfigError, load_config

    config_file = tmp_path / "server_config.json"
    config_file.write_text(json.dumps({"trashRetentionDays": 7}))
    assert load_config({"VIEWER_CONFIG": str(config_file)}).trashRetentionDays == 7
    assert load_config({"VIEWER_CONFIG": str(config_file), "VIEWER_TRASH_RETENTION_DAYS": "3"}).trashRetentionDays == 3
    assert load_config({"VIEWER_CONFIG": str(tmp_path / "none.json")}).trashRetentionDays == 30
    with pytest.raises(ConfigError, match="trashRetentionDays"):
        load_config({"VIEWER_CONFIG": str(tmp_path / "none.json"), "VIEWER_TRASH_RETENTION_DAYS": "-1"})


def test_the_conversion_worker_purges_what_is_due_once_an_hour(api, model, monkeypatch):
    from models_app.management.commands import conversion_worker

    assert api.delete(f"/api/v1/models/{model.id}").json()["code"] == 0
    Deletion.objects.filter(target_id=model.id).update(purge_at=timezone.now() - timedelta(seconds=1))
    worker = conversion_worker.Command()
    worker.next_trash_purge = 0.0  # as prepare() leaves it: the first check purges
    monkeypatch.setattr(worker, "recover", lambda: None)
    clock = [1000.0]
    monkeypatch.setattr(conversion_worker.time, "monotonic", lambda: clock[0])

    worker.periodic()
    assert Deletion.objects.get(target_id=model.id).purged_at is not None
    assert not trashed_model_dir(model.id).exists()

    purges = []
    monkeypatch.setattr(conversion_worker.trash_services, "trash_purge_due", lambda: purges.append(clock[0]) or [])
    clock[0] += conversion_worker.TRASH_PURGE_INTERVAL_SECONDS - 1
    worker.periodic()
    assert purges == []  # not again within the hour
    clock[0] += 1
    worker.periodic()
    assert purges == [clock[0]]


def test_the_admin_moves_to_the_trash_restores_and_purges(admin_client, api, model, admin_user):
    api.force_login(admin_user)  # the admin's first user turns accounts on: the API then needs a sign-in
    moved = admin_client.post("/admin/models_app/ifcmodel/", {"action": "move_to_trash", "_selected_action": [model.id]})
    assert moved.status_code == 302 and [i["id"] for i in data(api.get("/api/v1/trash"))] == [model.id]
    assert model.id in admin_client.get("/admin/models_app/trashitem/").content.decode()

    restored = admin_client.post("/admin/models_app/trashitem/", {"action": "restore", "_selected_action": [Deletion.objects.get().pk]})
    assert restored.status_code == 302 and data(api.get("/api/v1/trash")) == []
    assert api.get(f"/api/v1/models/{model.id}").json()["code"] == 0 and model_dir(model.id).exists()

    admin_client.post("/admin/models_app/ifcmodel/", {"action": "move_to_trash", "_selected_action": [model.id]})
    trashed = Deletion.objects.get(restored_at__isnull=True)
    admin_client.post("/admin/models_app/trashitem/", {"action": "purge", "_selected_action": [trashed.pk]})
    assert Deletion.objects.get(pk=trashed.pk).purged_at is not None and not trashed_model_dir(model.id).exists()
    assert not IfcModel.with_trashed.filter(pk=model.id).exists()
