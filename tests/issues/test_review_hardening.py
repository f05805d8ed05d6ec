"""Review records as careless clients and concurrent writers meet them."""

import json
import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from issues_app import services
from issues_app.models import ChangeEntry, Issue, Override, OverrideMigration
from models_app.signals import version_saved
from models_app.storage import model_dir
from tests.proxy.test_proxy_faults import FakeEditService

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

GUID = "2O2Fr$t4X7Zf8NOew3FLOH"


def test_the_issue_part_may_be_a_file_part(api, model):
    issue = SimpleUploadedFile("issue.json", json.dumps({"title": "From a Blob"}).encode(), content_type="application/json")
    response = api.post(f"/api/v1/models/{model.id}/issues", {"issue": issue}, format="multipart")
    assert response.json()["data"]["title"] == "From a Blob"


@pytest.mark.parametrize("author, provenance", [("", None), (None, None), ("  ", None)])
def test_blank_or_null_author_and_provenance_mean_the_defaults(post_issue, model, author, provenance):
    data = post_issue(model.id, {"title": "t", "author": author, "provenance": provenance}).json()["data"]
    assert (data["author"], data["provenance"]) == ("local-user", {"source": "UI"})


def test_camera_vectors_are_number_lists(post_issue, model):
    camera = {"eye": [1, 2, 3, 1], "look": [0, 0, 0], "up": [0, 0, 1]}
    assert post_issue(model.id, {"title": "t", "camera": camera}).json()["data"]["camera"] == camera


def test_a_patch_echoing_the_issue_changes_only_what_it_may(post_issue, model, api):
    issue = post_issue(model.id, {"title": "Crack"}).json()["data"]
    url = f"/api/v1/models/{model.id}/issues/{issue['id']}"
    unchanged = api.patch(url, {}, format="json").json()["data"]
    assert unchanged["updatedAt"] == issue["updatedAt"]
    echoed = api.patch(url, {**issue, "status": "checking", "author": "someone else", "id": "i_000000000000"}, format="json").json()["data"]
    assert (echoed["id"], echoed["status"], echoed["author"]) == (issue["id"], "checking", "local-user")


def test_concurrent_patches_of_different_fields_both_survive(post_issue, model, api):
    issue_id = post_issue(model.id, {"title": "Crack"}).json()["data"]["id"]
    barrier = threading.Barrier(2)

    def patch(changes):
        barrier.wait()
        for _ in range(5):
            services.issue_update(model_id=model.id, issue_id=issue_id, changes=changes)
        connection.close()

    threads = [threading.Thread(target=patch, args=(changes,)) for changes in ({"title": "Big crack"}, {"status": "resolved"})]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = Issue.objects.get(pk=issue_id)
    assert (stored.title, stored.status) == ("Big crack", "resolved")


def put(api, model_id, fields):
    return api.put(f"/api/v1/models/{model_id}/entities/{GUID}/properties", {"entityName": "Wall", "fields": fields}, format="json")


def test_description_and_classification_come_from_the_ifc(api, model):
    values = {GUID: {"Name": "Wall", "Description": "Load-bearing", "Classification": "EF_25_10"}}
    (model_dir(model.id) / "element-values.json").write_text(json.dumps(values))
    put(api, model.id, {"Description": "Partition", "Classification": "EF_25_30"})
    entries = {e.field: (e.old_value, e.new_value) for e in ChangeEntry.objects.all()}
    assert entries == {"Description": ("Load-bearing", "Partition"), "Classification": ("EF_25_10", "EF_25_30")}


def test_clearing_an_override_logs_the_value_that_becomes_effective(api, model):
    (model_dir(model.id) / "element-values.json").write_text(json.dumps({GUID: {"FireRating": "F30"}}))
    put(api, model.id, {"FireRating": "F90"})
    put(api, model.id, {"FireRating": ""})
    latest = ChangeEntry.objects.order_by("-seq").first()
    assert (latest.old_value, latest.new_value) == ("F90", "F30")


def test_a_replayed_save_writes_its_change_entries_once(model):
    changed = [{"guid": GUID, "changes": [{"field": "Name", "old": "A", "new": "B"}]}]
    for _ in range(2):
        version_saved.send(sender=None, model_id=model.id, version="v2", changed=changed, author="ana", provenance="AI", operation="update")
    assert ChangeEntry.objects.filter(diff__version="v2").count() == 1


@pytest.fixture
def fake(viewer_config):
    service = FakeEditService()
    viewer_config(editServiceURL=service.url)
    yield service
    service.close()


def test_migrate_refuses_a_model_with_staged_edits(api, model, fake):
    Override.objects.create(model=model, entity_id=GUID, field="Name", value="X")
    fake.body = {"source": "staging", "script": "..."}
    response = api.post(f"/api/v1/models/{model.id}/overrides/migrate")
    assert (response.status_code, response.json()["code"]) == (409, 40900)
    assert [path for _, path, _ in fake.received] == [f"/models/{model.id}/script"]
    assert Override.objects.count() == 1 and not OverrideMigration.objects.exists()


def test_one_migration_at_a_time(api, model, fake):
    OverrideMigration.objects.create(model=model)
    response = api.post(f"/api/v1/models/{model.id}/overrides/migrate")
    assert (response.status_code, response.json()["code"]) == (409, 40900)
    assert fake.received == []


def test_an_unreachable_edit_service_fails_the_whole_migration(api, model, viewer_config):
    from tests.e2e.stack import free_port

    viewer_config(editServiceURL=f"http://127.0.0.1:{free_port()}")
    Override.objects.create(model=model, entity_id=GUID, field="Name", value="X")
    response = api.post(f"/api/v1/models/{model.id}/overrides/migrate")
    assert (response.status_code, response.json()["code"]) == (502, 50200)
    assert Override.objects.count() == 1 and not OverrideMigration.objects.exists()


def test_the_issue_list_never_shows_a_stale_row(post_issue, model, api):
    url = f"/api/v1/models/{model.id}/issues"
    first = post_issue(model.id, {"title": "one"}).json()["data"]
    second = post_issue(model.id, {"title": "two"}).json()["data"]
    assert [i["title"] for i in api.get(url).json()["data"]] == ["two", "one"]
    api.patch(f"{url}/{first['id']}", {"status": "resolved"}, format="json")
    assert [i["status"] for i in api.get(url).json()["data"]] == ["open", "resolved"]
    api.delete(f"{url}/{second['id']}")
    listed = api.get(url).json()["data"]
    assert [(i["title"], i["status"]) for i in listed] == [("one", "resolved")]
    single = api.patch(f"{url}/{first['id']}", {}, format="json").json()["data"]
    assert listed[0] == single  # the list shows an issue exactly as the single answer does
