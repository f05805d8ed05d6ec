"""metadata.json, render.json and model.xkt (written unzipped by the converter) go gzip-compressed to a client that
accepts it; ranges and other clients get the file as it is."""

import gzip
import json

import pytest

from models_app.models import IfcModel
from models_app.storage import model_dir

pytestmark = pytest.mark.django_db

META = {"projectId": "p", "metaObjects": [{"id": f"2O2Fr$t4X7Zf8NOew3FL{i:04d}", "name": f"Door {i}", "type": "IfcDoor", "parent": "s"} for i in range(500)]}


@pytest.fixture
def ready_model():
    model = IfcModel.objects.create(name="m.ifc", status="ready")
    folder = model_dir(model.id)
    folder.mkdir(parents=True)
    (folder / "metadata.json").write_text(json.dumps(META))
    (folder / "model.xkt").write_bytes(b"x" * 4096)
    return model


def body(response) -> bytes:
    return b"".join(response.streaming_content)


def test_gzip_when_accepted_and_the_same_json(client, ready_model):
    url = f"/v1/models/{ready_model.id}/metadata.json"
    plain = client.get(url)
    packed = client.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert packed.status_code == 200
    assert packed["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed["Vary"]
    raw = body(packed)
    assert int(packed["Content-Length"]) == len(raw) < len(json.dumps(META)) / 5
    assert json.loads(gzip.decompress(raw)) == META
    assert "Content-Encoding" not in plain and "Accept-Encoding" in plain["Vary"]
    assert json.loads(body(plain)) == META
    assert packed["ETag"] != plain["ETag"]  # two representations, two validators
    again = client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert body(again) == raw and again["ETag"] == packed["ETag"]


@pytest.mark.parametrize("accept", ["", "identity", "gzip;q=0", "br, deflate"])
def test_plain_without_gzip(client, ready_model, accept):
    response = client.get(f"/v1/models/{ready_model.id}/metadata.json", HTTP_ACCEPT_ENCODING=accept)
    assert "Content-Encoding" not in response
    assert json.loads(body(response)) == META


def test_conditional_request_per_representation(client, ready_model):
    url = f"/v1/models/{ready_model.id}/metadata.json"
    packed_etag = client.get(url, HTTP_ACCEPT_ENCODING="gzip")["ETag"]
    plain_etag = client.get(url)["ETag"]
    assert client.get(url, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH=packed_etag).status_code == 304
    assert client.get(url, HTTP_IF_NONE_MATCH=plain_etag).status_code == 304
    assert client.get(url, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH=f"W/{packed_etag}").status_code == 304  # compared weakly
    assert client.get(url, HTTP_IF_NONE_MATCH="*").status_code == 304
    assert client.get(url, HTTP_IF_NONE_MATCH=packed_etag).status_code == 200  # the gzip validator is not the plain file's


def test_a_range_is_of_the_plain_file(client, ready_model):
    response = client.get(f"/v1/models/{ready_model.id}/metadata.json", HTTP_ACCEPT_ENCODING="gzip", HTTP_RANGE="bytes=0-9")
    assert response.status_code == 206 and "Content-Encoding" not in response
    assert body(response) == json.dumps(META).encode()[:10]


def test_a_republished_file_gets_a_fresh_copy(client, ready_model):
    url = f"/v1/models/{ready_model.id}/metadata.json"
    first = client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    body(first)
    changed = {**META, "projectId": "q"}
    (model_dir(ready_model.id) / "metadata.json").write_text(json.dumps(changed))
    second = client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert json.loads(gzip.decompress(body(second))) == changed
    assert second["ETag"] != first["ETag"]


def test_geometry_too(client, ready_model):
    response = client.get(f"/v1/models/{ready_model.id}/model.xkt", HTTP_ACCEPT_ENCODING="gzip")
    assert response["Content-Encoding"] == "gzip" and gzip.decompress(body(response)) == b"x" * 4096
