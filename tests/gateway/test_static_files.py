import re

import pytest

from models_app.models import IfcModel
from models_app.storage import model_dir
from viewer_gateway.web_client import start_chunks

pytestmark = pytest.mark.django_db

CONTENT = bytes(range(256)) * 40  # 10240 bytes


@pytest.fixture
def ready_model():
    model = IfcModel.objects.create(name="m.ifc", status="ready")
    folder = model_dir(model.id)
    folder.mkdir(parents=True)
    (folder / "model.xkt").write_bytes(CONTENT)
    (folder / "metadata.json").write_text('{"projectId": "p", "metaObjects": []}')
    return model


def body(response) -> bytes:
    return b"".join(response.streaming_content)


def test_whole_file_with_validators(client, ready_model):
    response = client.get(f"/v1/models/{ready_model.id}/model.xkt")
    assert response.status_code == 200
    assert body(response) == CONTENT
    assert response["Content-Length"] == str(len(CONTENT))
    assert response["Accept-Ranges"] == "bytes"
    assert response["ETag"].startswith('"') and response["Last-Modified"]


@pytest.mark.parametrize(
    "header, start, end",
    [("bytes=0-99", 0, 99), ("bytes=10000-", 10000, 10239), ("bytes=-40", 10200, 10239), ("bytes=10200-99999", 10200, 10239),
     ("bytes=0-" + "9" * 5000, 0, 10239), ("bytes=-" + "9" * 5000, 0, 10239)],
)
def test_ranges(client, ready_model, header, start, end):
    response = client.get(f"/v1/models/{ready_model.id}/model.xkt", HTTP_RANGE=header)
    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes {start}-{end}/{len(CONTENT)}"
    assert body(response) == CONTENT[start:end + 1]
    assert response["Content-Length"] == str(end - start + 1)


@pytest.mark.parametrize("header", ["bytes=10240-", "bytes=20000-20010", "bytes=-0", "bytes=" + "9" * 5000 + "-", "bytes=" + "9" * 5000 + "-" + "9" * 5001])
def test_unsatisfiable_range(client, ready_model, header):
    response = client.get(f"/v1/models/{ready_model.id}/model.xkt", HTTP_RANGE=header)
    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{len(CONTENT)}"


def test_malformed_range_serves_whole_file(client, ready_model):
    response = client.get(f"/v1/models/{ready_model.id}/model.xkt", HTTP_RANGE="bytes=0-1,5-9")
    assert response.status_code == 200 and body(response) == CONTENT


def test_conditional_requests(client, ready_model):
    first = client.get(f"/v1/models/{ready_model.id}/metadata.json")
    etag, modified = first["ETag"], first["Last-Modified"]
    assert client.get(f"/v1/models/{ready_model.id}/metadata.json", HTTP_IF_NONE_MATCH=etag).status_code == 304
    assert client.get(f"/v1/models/{ready_model.id}/metadata.json", HTTP_IF_MODIFIED_SINCE=modified).status_code == 304
    stale = client.get(f"/v1/models/{ready_model.id}/model.xkt", HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE='"other"')
    assert stale.status_code == 200  # If-Range mismatch: the whole (new) file
    fresh = client.get(f"/v1/models/{ready_model.id}/model.xkt", HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE=client.get(f"/v1/models/{ready_model.id}/model.xkt")["ETag"])
    assert fresh.status_code == 206


def test_unknown_model_and_missing_output_are_enveloped_404(client):
    model = IfcModel.objects.create(name="m.ifc")
    for path in [f"/v1/models/{model.id}/model.xkt", "/v1/models/m_ffffffffffffffff/metadata.json", "/v1/models/m_bad/model.xkt"]:
        response = client.get(path)
        assert response.status_code == 404
        assert response.json()["code"] == 40400
    assert "not available yet (status converting)" in client.get(f"/v1/models/{model.id}/model.xkt").json()["message"]


def test_the_page_names_the_chunks_its_entry_loads_at_once_as_module_preloads(client):
    """frontend/build.mjs lists them in preload.json (main.js and its imports); each is served, cached for good."""
    page = client.get("/").content.decode()
    preloads = re.findall(r'<link rel="modulepreload" href="([^"]+)">', page)
    assert preloads == [f"/static/{chunk}" for chunk in start_chunks()]
    assert any("/chunks/main-" in url for url in preloads) and len(preloads) >= 2, preloads
    for url in preloads:
        response = client.get(url)
        assert response.status_code == 200 and "immutable" in response["Cache-Control"], url
