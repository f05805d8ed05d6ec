"""A saved version's geometry on request: POST/GET /api/v1/models/{id}/versions/{version}/geometry and the files
/v1/models/{id}/versions/{version}/model.xkt|metadata.json. The gateway runs in-process (test client, real SQLite),
the edit service is a real process on the same data directory (it builds the versions in its sandbox), and the
conversion task is run here as a worker runs it: the real confined pipeline."""

from __future__ import annotations

import json
import socket
import time

import psutil
import pytest
from django.conf import settings
from django_tasks_db.models import DBTaskResult

from core import jobs
from core.identity import process_identity
from models_app import services, version_geometry
from models_app.models import IfcModel, VersionGeometry
from models_app.storage import model_dir, version_geometry_root
from tests.edit_service.test_api import EditService
from tests.e2e.stack import free_port
from tests.helpers import xkt_entity_ids

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

SCRIPT = '''"""A slab, a wall and, while PARAMS say so, a column."""

import script_lib as sl

PARAMS = {"with_column": True}


def build(params, out_path):
    model = sl.new_model("Versions")
    ground = sl.storey(model, "storey-ground", Name="Ground floor", elevation=0.0)
    sl.create_entity(model, "IfcSlab", "slab", storey=ground, Name="Slab", PredefinedType="FLOOR",
                     x=0.0, y=0.0, z=-0.2, width=6.0, depth=4.0, height=0.2)
    sl.create_entity(model, "IfcWall", "wall", storey=ground, Name="Wall", x=0.0, y=0.0, width=6.0, depth=0.3, height=3.0)
    if params["with_column"]:
        sl.create_entity(model, "IfcColumn", "column", storey=ground, Name="Column", x=4.0, y=2.0, width=0.4, depth=0.4, height=3.0)
    sl.save(model, out_path)
'''


@pytest.fixture(scope="module")
def edit_service():
    running = EditService(settings.DATA_DIR).start()
    yield running
    running.stop()


@pytest.fixture
def versioned(api, edit_service, viewer_config):
    """A scripted model saved as v1 (with the column) and v2 (without it); returns (model id, the column's GlobalId)."""
    viewer_config(editServiceURL=edit_service.url)
    model = services.model_create_for_script(name="versions.ifc")
    assert body(api.put(f"/api/v1/models/{model.id}/script", {"script": SCRIPT}, format="json"))
    assert body(api.post(f"/api/v1/models/{model.id}/script/save", {"note": "with column"}, format="json"))["version"] == "v1"
    assert body(api.put(f"/api/v1/models/{model.id}/script", {"params": {"with_column": False}}, format="json"))
    assert body(api.post(f"/api/v1/models/{model.id}/script/save", {"note": "without"}, format="json"))["version"] == "v2"
    diff = body(api.post(f"/api/v1/models/{model.id}/edit/diff", {"base": "v1", "target": "v2"}, format="json"))
    (column,) = diff["removed"]
    return model.id, column


def body(response):
    answer = response.json()
    assert answer["code"] == 0, answer
    return answer["data"]


def error(response) -> tuple[int, int]:
    return response.status_code, response.json()["code"]


def geometry_url(model_id: str, version: str) -> str:
    return f"/api/v1/models/{model_id}/versions/{version}/geometry"


def file_url(model_id: str, version: str, name: str) -> str:
    return f"/v1/models/{model_id}/versions/{version}/{name}"


def waiting_tasks(model_id: str, version: str) -> int:
    return sum(r.args_kwargs["args"] == ["version_geometry", model_id, version] for r in DBTaskResult.objects.ready())


def test_requested_once_converted_once_then_served(api, versioned, monkeypatch):
    model_id, column = versioned
    assert error(api.get(geometry_url(model_id, "v1"))) == (404, 40400)  # never requested
    for name in ("model.xkt", "metadata.json"):
        assert error(api.get(file_url(model_id, "v1", name))) == (404, 40400)

    queued = body(api.post(geometry_url(model_id, "v1")))
    assert queued == {"version": "v1", "status": "queued", "progress": {"phase": "queued", "percent": 0}, "error": ""}
    assert body(api.post(geometry_url(model_id, "v1"))) == queued  # deduplicated
    assert body(api.get(geometry_url(model_id, "v1"))) == queued
    assert waiting_tasks(model_id, "v1") == 1

    seen_while_converting = []
    real_convert = version_geometry.convert_ifc

    def convert_and_ask_meanwhile(*args, **kwargs):
        seen_while_converting.append(body(api.post(geometry_url(model_id, "v1"))))
        for name in ("model.xkt", "metadata.json"):
            seen_while_converting.append(error(api.get(file_url(model_id, "v1", name))))
        return real_convert(*args, **kwargs)

    monkeypatch.setattr(version_geometry, "convert_ifc", convert_and_ask_meanwhile)
    version_geometry.run_version_conversion(model_id, "v1")
    assert seen_while_converting == [
        {"version": "v1", "status": "converting", "progress": {"phase": "fetching", "percent": 2}, "error": ""}, (404, 40400), (404, 40400),
    ]
    assert waiting_tasks(model_id, "v1") == 1  # the request while converting queued nothing

    ready = body(api.get(geometry_url(model_id, "v1")))
    assert ready == {"version": "v1", "status": "ready", "progress": None, "error": ""}
    xkt = api.get(file_url(model_id, "v1", "model.xkt"))
    assert xkt.status_code == 200 and xkt["Content-Type"] == "application/octet-stream" and xkt["ETag"]
    content = b"".join(xkt.streaming_content)
    assert column in xkt_entity_ids(content)
    assert api.get(file_url(model_id, "v1", "model.xkt"), HTTP_IF_NONE_MATCH=xkt["ETag"]).status_code == 304
    part = api.get(file_url(model_id, "v1", "model.xkt"), HTTP_RANGE="bytes=0-9")
    assert part.status_code == 206 and b"".join(part.streaming_content) == content[:10]
    metadata = api.get(file_url(model_id, "v1", "metadata.json"))
    assert metadata.status_code == 200 and metadata["ETag"]
    meta_objects = {o["id"]: o for o in json.loads(b"".join(metadata.streaming_content))["metaObjects"]}
    assert (meta_objects[column]["type"], meta_objects[column]["name"]) == ("IfcColumn", "Column")
    assert sorted(p.name for p in version_geometry_root(model_id).iterdir()) == ["v1"]  # no work or staging folder left

    # versions never change: a ready version is answered as it is, never converted again
    assert body(api.post(geometry_url(model_id, "v1"))) == ready
    assert waiting_tasks(model_id, "v1") == 1
    published = (version_geometry_root(model_id) / "v1" / "model.xkt").stat().st_mtime_ns
    version_geometry.run_version_conversion(model_id, "v1")  # the task once more (a duplicate): nothing happens
    assert (version_geometry_root(model_id) / "v1" / "model.xkt").stat().st_mtime_ns == published


def test_unknown_versions_bad_patterns_and_drawings_are_refused_and_change_nothing(api, versioned):
    model_id, _ = versioned
    assert error(api.post(geometry_url(model_id, "v9"))) == (404, 40400)
    for version in ("x", "v0", "v01", "current", "V1", "v1.json", "v1234567890"):
        assert error(api.post(geometry_url(model_id, version))) == (400, 40001), version
        assert error(api.get(geometry_url(model_id, version))) == (400, 40001), version
        assert error(api.get(file_url(model_id, version, "model.xkt"))) == (404, 40400), version
    for model in ("m_0000000000000000", "m_bad", "M_0123456789ABCDEF"):
        assert error(api.post(geometry_url(model, "v1"))) == (404, 40400)
        assert error(api.get(file_url(model, "v1", "metadata.json"))) == (404, 40400)
    drawing = services.model_create_for_script(name="plan.dxf", format="dxf")
    refused = api.post(geometry_url(drawing.id, "v1"))
    assert error(refused) == (400, 40001) and "drawing" in refused.json()["message"]
    assert not VersionGeometry.objects.exists() and not jobs.waiting_args("version_geometry")
    assert not version_geometry_root(model_id).exists() and not version_geometry_root(drawing.id).exists()


def test_a_failed_conversion_says_why_and_is_queued_again_by_the_next_request(api, versioned, viewer_config):
    model_id, _ = versioned
    body(api.post(geometry_url(model_id, "v2")))
    DBTaskResult.objects.all().delete()  # a worker took the task
    viewer_config(editServiceURL=f"http://127.0.0.1:{free_port()}")  # the edit service is gone during the run
    version_geometry.run_version_conversion(model_id, "v2")
    failed = body(api.get(geometry_url(model_id, "v2")))
    assert failed["status"] == "failed" and "edit service" in failed["error"] and failed["progress"] is None
    assert not (version_geometry_root(model_id) / "v2").exists()
    assert sorted(p.name for p in version_geometry_root(model_id).iterdir()) == []  # no work folder left
    assert version_geometry.recover_interrupted_version_conversions() == []  # failed is final until asked again
    again = body(api.post(geometry_url(model_id, "v2")))
    assert (again["status"], again["error"]) == ("queued", "")
    assert waiting_tasks(model_id, "v2") == 1


def test_deleting_the_model_removes_its_version_geometry(api, versioned, monkeypatch):
    model_id, _ = versioned
    body(api.post(geometry_url(model_id, "v1")))
    version_geometry.run_version_conversion(model_id, "v1")
    assert (version_geometry_root(model_id) / "v1" / "model.xkt").is_file()
    assert body(api.delete(f"/api/v1/models/{model_id}")) is None
    assert error(api.get(file_url(model_id, "v1", "model.xkt"))) == (404, 40400)
    assert body(api.delete(f"/api/v1/trash/{model_id}")) is None  # the purge
    assert not VersionGeometry.with_trashed.exists() and not model_dir(model_id).exists()


def test_a_model_deleted_during_the_conversion_leaves_nothing(api, versioned, monkeypatch):
    model_id, _ = versioned
    body(api.post(geometry_url(model_id, "v1")))
    real_convert = version_geometry.convert_ifc

    def delete_meanwhile(*args, **kwargs):
        result = real_convert(*args, **kwargs)
        services.model_delete(model_id)
        return result

    monkeypatch.setattr(version_geometry, "convert_ifc", delete_meanwhile)
    version_geometry.run_version_conversion(model_id, "v1")
    assert not IfcModel.objects.filter(pk=model_id).exists() and not VersionGeometry.objects.exists()
    assert not model_dir(model_id).exists()  # nothing brought the folder back


def dead_worker_identity() -> str:
    dead = psutil.Popen(["true"])
    dead.wait()
    return f"{socket.gethostname()}:{dead.pid}:{int(time.time()) - 5}"


def test_a_conversion_whose_worker_died_is_recovered_and_then_completes(api, versioned):
    model_id, column = versioned
    body(api.post(geometry_url(model_id, "v1")))
    body(api.post(geometry_url(model_id, "v2")))
    DBTaskResult.objects.all().delete()  # the worker took both tasks ...
    VersionGeometry.objects.filter(model_id=model_id, version="v1").update(status="converting", worker=dead_worker_identity(), attempts=1)
    VersionGeometry.objects.filter(model_id=model_id, version="v2").update(status="converting", worker=process_identity(), attempts=1)
    leftover = version_geometry_root(model_id) / ".convert-v1-0123abcd"
    leftover.mkdir(parents=True)
    (leftover / "model.ifc").write_text("half")  # ... and died converting v1; v2's worker (this process) lives

    assert version_geometry.recover_interrupted_version_conversions() == [f"{model_id}/v1"]
    assert not leftover.exists()
    assert body(api.get(geometry_url(model_id, "v1")))["status"] == "queued" and waiting_tasks(model_id, "v1") == 1
    assert body(api.get(geometry_url(model_id, "v2")))["status"] == "converting"
    assert version_geometry.recover_interrupted_version_conversions() == []  # its task waits now

    version_geometry.run_version_conversion(model_id, "v1")
    assert body(api.get(geometry_url(model_id, "v1")))["status"] == "ready"
    assert column in xkt_entity_ids((version_geometry_root(model_id) / "v1" / "model.xkt").read_bytes())


def test_a_queued_conversion_whose_task_is_lost_is_enqueued_again_and_a_worker_killing_one_fails_it(api, versioned):
    model_id, _ = versioned
    body(api.post(geometry_url(model_id, "v1")))
    DBTaskResult.objects.all().delete()
    assert version_geometry.recover_interrupted_version_conversions() == [f"{model_id}/v1"]
    assert waiting_tasks(model_id, "v1") == 1

    dead = dead_worker_identity()
    VersionGeometry.objects.filter(model_id=model_id, version="v1").update(
        status="converting", worker=dead, attempts=version_geometry.MAX_ATTEMPTS)
    assert version_geometry.recover_interrupted_version_conversions() == []
    failed = body(api.get(geometry_url(model_id, "v1")))
    assert failed["status"] == "failed" and f"died {version_geometry.MAX_ATTEMPTS} times" in failed["error"]
