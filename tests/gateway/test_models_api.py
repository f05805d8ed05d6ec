import os
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django_tasks_db.models import DBTaskResult

from models_app.models import IfcModel
from models_app.storage import model_dir, trashed_model_dir
from tests.helpers import MINIMAL_IFC, sample

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]


def upload(api, name="tiny.ifc", content=MINIMAL_IFC):
    return api.post("/api/v1/models", {"file": SimpleUploadedFile(name, content)}, format="multipart")


def leftovers() -> list[str]:
    return sorted(os.listdir(settings.MODELS_DIR)) + sorted(os.listdir(settings.UPLOAD_TMP_DIR))


def test_upload_stores_file_and_queues_conversion(api):
    content = sample("IfcOpenHouse_IFC4.ifc").read_bytes()
    response = upload(api, "IfcOpenHouse_IFC4.ifc", content)
    assert response.status_code == 200
    body = response.json()
    assert (body["code"], body["message"]) == (0, "ok")
    model = body["data"]
    assert model["status"] == "converting" and model["name"] == "IfcOpenHouse_IFC4.ifc"
    assert model["size"] == len(content) and model["error"] == ""
    assert model["progress"] == {"phase": "queued", "percent": 0}
    assert model["id"].startswith("m_") and len(model["id"]) == 18
    assert (model_dir(model["id"]) / "model.ifc").read_bytes() == content
    assert [r.args_kwargs["args"] for r in DBTaskResult.objects.all()] == [["conversion", model["id"]]]


def test_list_is_newest_first_and_get_returns_one(api):
    ids = [upload(api).json()["data"]["id"] for _ in range(3)]
    listed = api.get("/api/v1/models").json()["data"]
    assert [m["id"] for m in listed] == ids[::-1]
    assert all(m["createdAt"].endswith("Z") for m in listed)
    one = api.get(f"/api/v1/models/{ids[1]}").json()
    assert one["code"] == 0 and one["data"]["id"] == ids[1]


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("plan.dwg", MINIMAL_IFC, "only .ifc files"),
        ("fake.ifc", b"PK\x03\x04 this is a zip file", "ISO-10303-21"),
        ("fake.ifc", b"<html>not a model</html>", "ISO-10303-21"),
        ("empty.ifc", b"", "empty"),
        ("noschema.ifc", b"ISO-10303-21;\nHEADER;\nENDSEC;\n", "FILE_SCHEMA"),
    ],
)
def test_bad_files_are_rejected_and_nothing_is_stored(api, name, content, message):
    response = upload(api, name, content)
    assert response.status_code == 400
    assert response.json()["code"] == 40001
    assert message in response.json()["message"]
    assert IfcModel.objects.count() == 0 and leftovers() == []


def test_missing_file_part(api):
    response = api.post("/api/v1/models", {"other": "x"}, format="multipart")
    assert (response.status_code, response.json()["code"]) == (400, 40001)


def test_json_body_instead_of_multipart(api):
    response = api.post("/api/v1/models", {"file": "x"}, format="json")
    assert response.json()["code"] == 40001


def test_oversized_upload_is_rejected_while_streaming(api, viewer_config):
    viewer_config(maxUploadMB=0.5)
    response = upload(api, "big.ifc", MINIMAL_IFC + b"/*" + b"x" * (530 * 1024) + b"*/")
    assert (response.status_code, response.json()["code"]) == (400, 40002)
    assert "512 KB" in response.json()["message"]
    assert IfcModel.objects.count() == 0 and leftovers() == []


def test_oversized_content_length_is_rejected_before_reading(api, viewer_config, client):
    viewer_config(maxUploadMB=0.01)
    response = client.generic(
        "POST", "/api/v1/models", b"x" * 200_000, content_type="multipart/form-data; boundary=zzz"
    )
    assert (response.status_code, response.json()["code"]) == (400, 40002)
    assert IfcModel.objects.count() == 0 and leftovers() == []


@pytest.mark.parametrize("bad_id", ["m_123", "m_ZZZZZZZZZZZZZZZZ", "..", "m_0123456789abcdef0", "%2e%2e%2fsecret"])
def test_bad_model_ids_answer_404_in_the_envelope(api, bad_id):
    for method, suffix in [("get", ""), ("delete", ""), ("post", "/retry"), ("get", "/download")]:
        response = getattr(api, method)(f"/api/v1/models/{bad_id}{suffix}")
        assert response.status_code == 404, (method, suffix)
        assert response.json()["code"] == 40400


def test_unknown_model(api):
    response = api.get("/api/v1/models/m_0123456789abcdef")
    assert response.status_code == 404
    assert response.json() == {"code": 40400, "message": "model m_0123456789abcdef not found", "data": None}


def test_unknown_route_and_wrong_method_are_enveloped(api):
    response = api.get("/api/v1/nothing-here")
    assert response.status_code == 404 and response.json()["code"] == 40400
    response = api.put("/api/v1/models", {}, format="json")
    assert response.status_code == 400 and response.json()["code"] == 40001
    assert "PUT" in response.json()["message"] and "POST" in response["Allow"]


def test_delete_moves_the_model_to_the_trash_and_the_purge_removes_record_and_files(api):
    model_id = upload(api).json()["data"]["id"]
    folder = model_dir(model_id)
    (folder / "model.xkt").write_bytes(b"x")
    response = api.delete(f"/api/v1/models/{model_id}")
    assert response.json() == {"code": 0, "message": "ok", "data": None}
    assert not folder.exists() and not IfcModel.objects.filter(pk=model_id).exists()
    assert (trashed_model_dir(model_id) / "model.xkt").is_file()
    assert api.delete(f"/api/v1/models/{model_id}").status_code == 404
    assert api.delete(f"/api/v1/trash/{model_id}").json()["code"] == 0
    assert not trashed_model_dir(model_id).exists() and not IfcModel.with_trashed.filter(pk=model_id).exists()


def test_retry_requeues_a_failed_model(api):
    model_id = upload(api).json()["data"]["id"]
    IfcModel.objects.filter(pk=model_id).update(status="failed", error="boom", job="idle")
    response = api.post(f"/api/v1/models/{model_id}/retry")
    data = response.json()["data"]
    assert (data["status"], data["error"]) == ("converting", "")
    assert DBTaskResult.objects.count() == 2


def test_download_returns_the_ifc_with_a_safely_quoted_name(api):
    content = MINIMAL_IFC
    model_id = upload(api, 'Haus "Süd"; v2.ifc', content).json()["data"]["id"]
    response = api.get(f"/api/v1/models/{model_id}/download")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == content
    disposition = response["Content-Disposition"]
    assert disposition.startswith("attachment;")
    assert "filename*=utf-8''Haus%20%22S%C3%BCd%22%3B%20v2.ifc" in disposition
    assert '"; v2' not in disposition


def test_names_with_paths_keep_only_the_base_name(api):
    model = upload(api, "../../etc/evil.ifc").json()["data"]
    assert model["name"] == "evil.ifc"
    assert Path(settings.MODELS_DIR, model["id"], "model.ifc").exists()
