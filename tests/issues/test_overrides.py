import json
import threading

import pytest
from django.db import connection, connections
from rest_framework.test import APIClient

from issues_app.models import ChangeEntry, Override
from models_app.storage import model_dir

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

GUID = "2O2Fr$t4X7Zf8NOew3FLOH"
OTHER = "3cUkl32yn9qRSPvBJVyWYp"


def put(api, model_id, fields, entity_id=GUID, **extra):
    return api.put(f"/api/v1/models/{model_id}/entities/{entity_id}/properties", {"entityName": "Wall 1", "fields": fields, **extra}, format="json")


def log(api, model_id):
    return api.get(f"/api/v1/models/{model_id}/changes").json()["data"]


def test_empty_override_set_and_change_log(api, model):
    assert api.get(f"/api/v1/models/{model.id}/overrides").json() == {"code": 0, "message": "ok", "data": {}}
    assert log(api, model.id) == []


def test_put_sets_overrides_and_logs_each_field(api, model):
    response = put(api, model.id, {"Name": "Wall A", "FireRating": "F90"})
    assert response.json()["data"] == {"Name": "Wall A", "FireRating": "F90"}
    put(api, model.id, {"Comments": "see plan"}, entity_id=OTHER)
    assert api.get(f"/api/v1/models/{model.id}/overrides").json()["data"] == {
        GUID: {"FireRating": "F90", "Name": "Wall A"},
        OTHER: {"Comments": "see plan"},
    }
    entries = log(api, model.id)
    assert [(e["entityId"], e["field"], e["oldValue"], e["newValue"]) for e in entries] == [
        (OTHER, "Comments", "", "see plan"),
        (GUID, "FireRating", "", "F90"),
        (GUID, "Name", "", "Wall A"),
    ]
    entry = entries[-1]
    assert (entry["operation"], entry["author"], entry["provenance"], entry["entityName"]) == ("update", "local-user", {"source": "UI"}, "Wall 1")
    assert entry["id"].startswith("c_") and len(entry["id"]) == 14 and entry["createdAt"].endswith("Z")


def test_old_value_is_the_previously_effective_value(api, model):
    put(api, model.id, {"Name": "A"})
    put(api, model.id, {"Name": "B"})
    put(api, model.id, {"Name": ""})
    assert [(e["oldValue"], e["newValue"]) for e in log(api, model.id)] == [("B", ""), ("A", "B"), ("", "A")]
    assert api.get(f"/api/v1/models/{model.id}/overrides").json()["data"] == {}


def test_old_value_falls_back_to_the_ifc_value(api, model):
    metadata = {
        "projectId": "p",
        "metaObjects": [{"id": GUID, "type": "IfcWall", "name": "Basic Wall", "propertySetIds": ["ps"]}],
        "propertySets": [{"id": "ps", "name": "Pset_WallCommon", "type": "Pset", "properties": [{"name": "FireRating", "value": "F30", "type": "IfcLabel"}]}],
    }
    (model_dir(model.id) / "metadata.json").write_text(json.dumps(metadata))
    put(api, model.id, {"Name": "Renamed", "FireRating": "F30"})  # F30 equals the IFC value: no entry
    assert [(e["field"], e["oldValue"], e["newValue"]) for e in log(api, model.id)] == [("Name", "Basic Wall", "Renamed")]
    assert api.get(f"/api/v1/models/{model.id}/overrides").json()["data"] == {GUID: {"Name": "Renamed"}}


def test_equal_value_and_clearing_nothing_write_no_entry(api, model):
    put(api, model.id, {"Name": "A"})
    assert put(api, model.id, {"Name": "A", "Description": ""}).json()["data"] == {"Name": "A"}
    assert len(log(api, model.id)) == 1


def test_author_and_provenance_can_be_given(api, model):
    put(api, model.id, {"Name": "A"}, author="agent", provenance={"source": "AI"})
    entry = log(api, model.id)[0]
    assert (entry["author"], entry["provenance"]) == ("agent", {"source": "AI"})


@pytest.mark.parametrize(
    "body, message",
    [
        ({"fields": {"Name": "A", "Height": "3"}}, "Height"),
        ({"fields": {}}, "fields"),
        ({"entityName": "x"}, "fields"),
        ({"fields": {"Name": 5}}, "Name"),
        ({"fields": {"Name": None}}, "Name"),
        ({"fields": "Name=A"}, "fields"),
        ({"fields": {"Name": "A"}, "provenance": {"source": "ROBOT"}}, "source"),
    ],
)
def test_bad_bodies_change_nothing(api, model, body, message):
    put(api, model.id, {"Name": "keep"})
    response = api.put(f"/api/v1/models/{model.id}/entities/{GUID}/properties", body, format="json")
    assert (response.status_code, response.json()["code"]) == (400, 40001)
    assert message in response.json()["message"]
    assert Override.objects.get().value == "keep" and ChangeEntry.objects.count() == 1


def test_bad_entity_id_and_unknown_model(api, model):
    assert put(api, model.id, {"Name": "A"}, entity_id="x" * 65).json()["code"] == 40001
    assert put(api, model.id, {"Name": "A"}, entity_id="not-a-22-char-guid").json()["code"] == 0  # ids of any tool
    assert put(api, "m_0000000000000000", {"Name": "A"}).status_code == 404
    assert put(api, "m_0000000000000000", {"Name": "A"}, entity_id="x" * 65).status_code == 404  # the model first
    assert api.get("/api/v1/models/m_0000000000000000/overrides").json()["code"] == 40400
    assert api.get("/api/v1/models/m_0000000000000000/changes").json()["code"] == 40400
    assert Override.objects.count() == 1


def test_malformed_json_body(api, model):
    response = api.generic("PUT", f"/api/v1/models/{model.id}/entities/{GUID}/properties", "{bad", content_type="application/json")
    assert (response.status_code, response.json()["code"]) == (400, 40001)


def test_failure_mid_request_leaves_nothing_half_written(api, model, monkeypatch):
    real_create = ChangeEntry.objects.create
    calls = []

    def fail_on_second(**kwargs):
        calls.append(kwargs["field"])
        if len(calls) == 2:
            raise RuntimeError("disk full")
        return real_create(**kwargs)

    monkeypatch.setattr(ChangeEntry.objects, "create", fail_on_second)
    response = put(api, model.id, {"Name": "A", "Description": "B"})
    assert response.status_code == 500 and response.json()["code"] == 50000
    assert Override.objects.count() == 0 and ChangeEntry.objects.count() == 0


def test_twenty_parallel_puts_on_one_field(model):
    values = [f"value-{i}" for i in range(20)]
    barrier = threading.Barrier(len(values))
    statuses = []

    def writer(value):
        client = APIClient()
        barrier.wait()
        try:
            statuses.append(put(client, model.id, {"Name": value}).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(v,)) for v in values]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * len(values)

    entries = list(ChangeEntry.objects.filter(model=model).order_by("created_at", "seq"))
    assert len(entries) == len(values)  # all values differ, so every write was accepted and logged once
    assert entries[0].old_value == ""
    for previous, entry in zip(entries, entries[1:]):
        assert entry.old_value == previous.new_value
    assert Override.objects.get(model=model, entity_id=GUID, field="Name").value == entries[-1].new_value
    assert sorted(e.new_value for e in entries) == sorted(values)
    connections.close_all()
