"""The edit service over HTTP: a real process (uvicorn) on a free port with its own data directory."""

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time

import pytest
import requests

from core.service_secret import HEADER as SECRET_HEADER
from core.service_secret import read_secret
from tests.e2e.stack import ROOT, free_port
from tests.processes import spawn, stop
from tests.edit_service.conftest import MODEL_ID, example
from tests.helpers import MINIMAL_IFC, sample

pytestmark = pytest.mark.e2e


class EditService:
    def __init__(self, data_dir, host="127.0.0.1", **env):
        self.data_dir = data_dir
        self.host = host
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith(("VIEWER_", "DJANGO_", "EDIT_"))}, "VIEWER_DATA_DIR": str(data_dir), "DIE_WITH_PARENT": "1",
                    "EDIT_SERVICE_HOST": host, **env}
        self.process = None
        self.url = None

    def start(self):
        port = free_port()
        self.env["EDIT_SERVICE_PORT"] = str(port)
        self.url = f"http://{self.host}:{port}"
        with open(self.data_dir / f"edit-{port}.log", "ab") as log:
            self.process = spawn([sys.executable, "-m", "edit_service"], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                requests.get(f"{self.url}/health", timeout=2)
                return self
            except requests.RequestException:  # not listening yet, or still starting up
                time.sleep(0.1)
        raise RuntimeError("edit service did not start")

    def stop(self, sig=signal.SIGTERM):
        if self.process:
            stop(self.process, sig)

    @property
    def secret_headers(self) -> dict[str, str]:
        return {SECRET_HEADER: read_secret(self.data_dir)}

    def new_model(self) -> str:
        """A fresh model folder in the service's data directory; its path on the service (/models/{id})."""
        model_id = "m_" + secrets.token_hex(8)
        (self.data_dir / "models" / model_id).mkdir(parents=True)
        return f"/models/{model_id}"

    def call(self, method, path, *, headers=None, secret=True, **kwargs):
        """A request as the gateway makes it: with the service secret (secret=False: without)."""
        headers = {**(self.secret_headers if secret else {}), **(headers or {})}
        return requests.request(method, f"{self.url}{path}", headers=headers, timeout=120, **kwargs)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("edit-data")
    running = EditService(data_dir).start()
    yield running
    running.stop()


def test_binds_to_loopback_by_default(service):
    import psutil

    listening = {c.laddr for p in [psutil.Process(service.process.pid), *psutil.Process(service.process.pid).children(recursive=True)]
                 for c in p.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}
    assert listening and {address.ip for address in listening} == {"127.0.0.1"}


def test_health_openapi_and_docs(service):
    assert service.call("GET", "/health").json() == {"status": "ok"}
    document = service.call("GET", "/openapi.json").json()
    assert (document["openapi"], document["info"]["version"]) == ("3.1.0", "0.1.0")
    for path in ["/models/{model_id}/script", "/models/{model_id}/script/run", "/models/{model_id}/versions", "/models/{model_id}/user-edits"]:
        assert path in document["paths"]
    docs = service.call("GET", "/docs")
    assert docs.status_code == 200 and "cdn" not in docs.text.lower()
    assert service.call("GET", "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js").status_code == 200


def test_full_script_cycle_over_http(service, model):
    assert service.call("GET", f"{model}/versions").json() == {"versions": [], "current": None}
    state = service.call("PUT", f"{model}/script", json={"script": example("small_house"), "note": "start"}).json()
    assert state["source"] == "staging"
    assert service.call("GET", f"{model}/script/params").json()["wall_height"] == 3.0
    run = service.call("POST", f"{model}/script/run").json()
    assert run["ok"] and run["semanticDiff"] is None
    v1 = service.call("POST", f"{model}/script/save", json={"note": "first"}).json()
    assert v1["version"] == "v1"
    params = {**service.call("GET", f"{model}/script/params").json(), "fire_rating": "F90"}
    assert service.call("PUT", f"{model}/script", json={"params": params}).status_code == 200
    staged_run = service.call("POST", f"{model}/script/run").json()
    assert staged_run["semanticDiff"] == {"added": 0, "removed": 0, "changed": 4}
    v2 = service.call("POST", f"{model}/script/save").json()  # no body: note defaults to ""
    assert (v2["version"], v2["note"]) == ("v2", "")
    versions = service.call("GET", f"{model}/versions").json()
    assert [v["version"] for v in versions["versions"]] == ["v1", "v2"] and versions["current"] == "v2"
    scripts = service.call("GET", f"{model}/scripts").json()
    assert [s["version"] for s in scripts] == ["v1", "v2"] and scripts[1]["params"]["fire_rating"] == "F90"
    diff = service.call("POST", f"{model}/diff", json={"base": "v1", "target": "v2"}).json()
    assert len(diff["changed"]) == 4 and diff["added"] == [] and diff["removed"] == []
    script_diff = service.call("POST", f"{model}/script/diff", json={"base": "v1", "target": "v2"}).json()
    assert script_diff["params"]["changed"] == {"fire_rating": {"old": "F30", "new": "F90"}}
    rolled = service.call("POST", f"{model}/script/rollback", json={"version": "v1"}).json()
    assert rolled["rolledBackTo"] == "v1"
    staging_diff = service.call("GET", f"{model}/script/staging/diff", params={"from": 0, "to": 1}).json()
    assert staging_diff["params"]["changed"] == {"fire_rating": {"old": "F90", "new": "F30"}}
    assert service.call("POST", f"{model}/script/undo").status_code == 200
    assert service.call("POST", f"{model}/script/redo").status_code == 200
    assert service.call("POST", f"{model}/script/redo").status_code == 409
    assert service.call("POST", f"{model}/script/discard").json() == {"discarded": True, "current": "v2"}
    assert len(service.call("GET", f"{model}/history").json()) == 4


def test_failed_run_is_422_with_the_error_tail(service, model):
    failing = "PARAMS = {'n': 1}\n\ndef build(params, out_path):\n    raise ValueError('no walls today')\n"
    service.call("PUT", f"{model}/script", json={"script": failing})
    response = service.call("POST", f"{model}/script/run")
    assert response.status_code == 422
    assert "ValueError: no walls today" in response.json()["detail"]
    save = service.call("POST", f"{model}/script/save", json={"note": "x"})
    assert save.status_code == 422
    assert service.call("GET", f"{model}/versions").json()["versions"] == []


@pytest.mark.parametrize(
    "method, path, body, loc",
    [
        ("PUT", "/script", {"script": "x", "params": {"a": 1}}, ["body"]),
        ("PUT", "/script", {}, ["body"]),
        ("PUT", "/script", {"params": [1, 2]}, ["body", "params"]),
        ("POST", "/script/rollback", {}, ["body", "version"]),
        ("POST", "/script/rollback", {"version": "1"}, ["body", "version"]),
        ("POST", "/script/diff", {"base": "v1"}, ["body", "target"]),
        ("POST", "/diff", {"base": "v1", "target": "latest"}, ["body", "target"]),
        ("POST", "/user-edits", {"events": []}, ["body", "origin"]),
        ("POST", "/user-edits", {"origin": "ifc-upload", "events": [{"kind": "added"}]}, ["body", "events", 0, "guid"]),
        ("POST", "/user-edits", {"origin": "ifc-upload", "events": [{"guid": "g", "kind": "renamed"}]}, ["body", "events", 0, "kind"]),
    ],
)
def test_validation_errors_are_422_lists(service, model, method, path, body, loc):
    response = service.call(method, f"{model}{path}", json=body)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert isinstance(detail, list) and detail
    assert detail[0]["loc"] == loc and detail[0]["msg"] and detail[0]["type"]


def test_malformed_json_is_422(service, model):
    response = service.call("PUT", f"{model}/script", data="{oops", headers={"Content-Type": "application/json"})
    assert response.status_code == 422 and response.json()["detail"][0]["type"] == "json_invalid"


def test_contract_violation_is_422_with_the_reason(service, model):
    response = service.call("PUT", f"{model}/script", json={"script": "PARAMS = {'a': len('x')}\ndef build(p, o): pass\n"})
    assert response.status_code == 422 and "literal" in response.json()["detail"]


def test_unknown_model_version_and_bad_ids(service, model):
    for method, path in [("GET", "/script"), ("GET", "/versions"), ("POST", "/script/run"), ("DELETE", "/pending"), ("GET", "/history")]:
        assert service.call(method, f"/models/m_ffffffffffffffff{path}").status_code == 404, path
        assert service.call(method, f"/models/not-an-id{path}").status_code == 404, path
    assert service.call("POST", f"{model}/script/rollback", json={"version": "v7"}).status_code == 404
    assert service.call("POST", f"{model}/diff", json={"base": "v1", "target": "v2"}).status_code == 404
    assert service.call("GET", "/no/such/route").json() == {"detail": "Not Found"}


def test_pending_and_user_edits(service, model):
    assert service.call("GET", "/models/m_ffffffffffffffff/pending").json() == []  # no model check
    assert service.call("GET", f"{model}/pending").json() == []
    assert service.call("DELETE", f"{model}/pending").json() == {"discarded": 0}
    body = {"origin": "ifc-upload", "events": [{"guid": "2O2Fr$t4X7Zf8NOew3FLOH", "name": "Wall", "kind": "modified", "changes": [{"field": "Name", "oldValue": "A", "newValue": "B"}]}]}
    result = service.call("POST", f"{model}/user-edits", json=body).json()
    assert result["appended"] == 1 and result["ids"][0].startswith("e_")
    entry = service.call("GET", f"{model}/history").json()[-1]
    assert (entry["author"], entry["modifiedBy"], entry["origin"], entry["kind"]) == ("user-upload", "USER", "ifc-upload", "modified")
    assert entry["changes"] == [{"field": "Name", "oldValue": "A", "newValue": "B"}]
    assert entry["timestamp"].endswith("Z")


@pytest.mark.parametrize(
    "method, path",
    [("PUT", "/entities/2O2Fr$t4X7Zf8NOew3FLOH"), ("DELETE", "/entities/2O2Fr$t4X7Zf8NOew3FLOH"), ("GET", "/entities/2O2Fr$t4X7Zf8NOew3FLOH/editable-schema"), ("POST", "/commit")],
)
def test_retired_direct_editing_answers_410(service, model, method, path):
    response = service.call(method, f"{model}{path}", json={})
    assert response.status_code == 410
    assert "retired" in response.json()["detail"] and "build script" in response.json()["detail"]


def test_upload_diff_stores_nothing(service, model):
    service.call("PUT", f"{model}/script", json={"script": example("small_house")})
    service.call("POST", f"{model}/script/run")
    folder = service.data_dir / model.removeprefix("/")
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    with open(sample("IfcOpenHouse_IFC4.ifc"), "rb") as handle:
        diff = service.call("POST", f"{model}/diff/upload", files={"file": ("house.ifc", handle)}).json()
    assert len(diff["added"]) > 0 and len(diff["removed"]) == 13
    assert diff["labels"][diff["removed"][0]].endswith(")")
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before
    bad = service.call("POST", f"{model}/diff/upload", files={"file": ("x.ifc", b"not an ifc")})
    assert bad.status_code == 422


def test_oversized_upload_diff_is_refused(tmp_path):
    (tmp_path / "models" / MODEL_ID).mkdir(parents=True)
    service = EditService(tmp_path, EDIT_UPLOAD_MAX_MB="0.01").start()
    try:
        response = service.call("POST", f"/models/{MODEL_ID}/diff/upload", files={"file": ("big.ifc", MINIMAL_IFC + b" " * 20000)})
        assert response.status_code == 422 and "upload limit" in response.json()["detail"]
    finally:
        service.stop()


def test_sandbox_missing_refuses_with_no_side_effect(tmp_path):
    (tmp_path / "models" / MODEL_ID).mkdir(parents=True)
    service = EditService(tmp_path, EDIT_SANDBOX_BWRAP="/nonexistent/bwrap").start()
    try:
        service.call("PUT", f"/models/{MODEL_ID}/script", json={"script": example("small_house")})
        staging = (tmp_path / "models" / MODEL_ID / "script" / "staging.json").read_bytes()
        response = service.call("POST", f"/models/{MODEL_ID}/script/run")
        assert response.status_code == 503 and "bubblewrap" in response.json()["detail"]
        assert service.call("POST", f"/models/{MODEL_ID}/script/save").status_code == 503
        assert (tmp_path / "models" / MODEL_ID / "script" / "staging.json").read_bytes() == staging
        assert not (tmp_path / "models" / MODEL_ID / "model.ifc").exists()
    finally:
        service.stop()


SLOW_HOUSE = example("small_house").replace("    sl.save(model, out_path)", "    import time\n    time.sleep(3)\n    sl.save(model, out_path)")


def test_kill_minus_nine_during_save_leaves_versions_consistent(tmp_path):
    (tmp_path / "models" / MODEL_ID).mkdir(parents=True)
    path = f"/models/{MODEL_ID}"
    service = EditService(tmp_path).start()
    service.call("PUT", f"{path}/script", json={"script": example("small_house")})
    assert service.call("POST", f"{path}/script/save").json()["version"] == "v1"
    service.call("PUT", f"{path}/script", json={"script": SLOW_HOUSE})
    def save_until_killed():
        try:
            service.call("POST", f"{path}/script/save")
        except requests.ConnectionError:
            pass  # the service is killed mid-save

    threading.Thread(target=save_until_killed, daemon=True).start()
    time.sleep(1.5)
    service.stop(signal.SIGKILL)

    restarted = EditService(tmp_path).start()
    try:
        versions = restarted.call("GET", f"{path}/versions").json()
        names = [v["version"] for v in versions["versions"]]
        assert names in (["v1"], ["v1", "v2"])
        folder = tmp_path / "models" / MODEL_ID / "script" / "versions"
        for name in names:
            for suffix in (".py", ".map.json", ".snapshot.json", ".json"):
                assert (folder / f"{name}{suffix}").is_file(), (name, suffix)
        if names == ["v1"]:
            assert restarted.call("GET", f"{path}/script").json()["source"] == "staging"  # the staged edit survived
        second = restarted.call("POST", f"{path}/script/save").json()
        assert second["version"] == f"v{len(names) + 1}"
        leftovers = [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
        assert leftovers == []
    finally:
        restarted.stop()


def test_two_edit_service_processes_serialise_saves(tmp_path):
    (tmp_path / "models" / MODEL_ID).mkdir(parents=True)
    path = f"/models/{MODEL_ID}"
    first, second = EditService(tmp_path).start(), EditService(tmp_path).start()
    try:
        results = []

        def stage_and_save(service, n):
            params_script = example("small_house").replace('"name": "Small house"', f'"name": "House {n}"')
            service.call("PUT", f"{path}/script", json={"script": params_script})
            results.append(service.call("POST", f"{path}/script/save", json={"note": str(n)}).status_code)

        threads = [threading.Thread(target=stage_and_save, args=(service, n)) for n, service in enumerate([first, second] * 3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert set(results) <= {200, 422} and 200 in results  # 422 only: another save consumed the staging first
        versions = first.call("GET", f"{path}/versions").json()["versions"]
        assert [v["version"] for v in versions] == [f"v{i}" for i in range(1, results.count(200) + 1)]
        folder = tmp_path / "models" / MODEL_ID / "script" / "versions"
        for version in versions:
            meta = json.loads((folder / f"{version['version']}.json").read_text())
            assert (folder / f"{version['version']}.py").read_text().count("House") == 1
            assert meta["version"] == version["version"]
    finally:
        first.stop()
        second.stop()


def test_locate_and_edit_call_over_http(service, model):
    from edit_service.sandbox.script_lib import guid_for

    service.call("PUT", f"{model}/script", json={"script": example("small_house")})
    stale = service.call("GET", f"{model}/script/locate", params={"guid": guid_for("door-entrance")}).json()
    assert stale == {"found": False, "guid": guid_for("door-entrance"), "stale": True}
    assert service.call("POST", f"{model}/script/edit-call", json={"designKey": "door-entrance", "argument": "Name", "value": "X"}).status_code == 409
    service.call("POST", f"{model}/script/run")
    located = service.call("GET", f"{model}/script/locate", params={"guid": guid_for("door-entrance")}).json()
    assert located["found"] and located["origin"] == "literal" and not located["stale"]
    assert service.call("GET", f"{model}/script/locate").status_code == 422  # guid required
    edited = service.call("POST", f"{model}/script/edit-call", json={"designKey": "door-entrance", "argument": "Name", "value": "Front door"})
    assert edited.status_code == 200 and edited.json()["semanticDiff"]["changed"] == 1
    assert 'Name="Front door"' in service.call("GET", f"{model}/script").json()["script"]
    traced = service.call("POST", f"{model}/script/edit-call", json={"designKey": "window-south-1", "argument": "Name", "value": "W"})
    assert traced.status_code == 422 and "traced" in traced.json()["detail"]
    missing = service.call("POST", f"{model}/script/edit-call", json={"designKey": "door-entrance", "argument": "Name"})
    assert missing.status_code == 422 and missing.json()["detail"][0]["loc"] == ["body", "value"]


def test_a_drawing_over_http_upload_diff_and_dxf_user_edits(service, model, tmp_path):
    """A drawing (model.kind dxf) through the API: run, diff of a DXF edited in another CAD tool, its edits recorded
    as user edits with origin dxf-upload."""
    import ezdxf

    (service.data_dir / model.lstrip("/") / "model.kind").write_text("dxf")
    assert service.call("PUT", f"{model}/script", json={"script": example("floor_plan")}).status_code == 200
    assert service.call("POST", f"{model}/script/run").json()["ok"]
    edited = ezdxf.readfile(service.data_dir / model.lstrip("/") / "model.dxf")
    for entity in edited.modelspace().query("TEXT"):
        if entity.get_xdata("SCRIPTLIB")[0].value == "label-living":
            entity.dxf.text = "Lounge"
    path = tmp_path / "edited.dxf"
    edited.saveas(path)
    with open(path, "rb") as handle:
        diff = service.call("POST", f"{model}/diff/upload", files={"file": ("edited.dxf", handle)}).json()
    (changed,) = diff["changed"]
    assert changed["guid"] == "label-living" and {"field": "text", "old": "Living", "new": "Lounge"} in changed["changes"]
    events = [{"guid": changed["guid"], "kind": "modified", "changes": [{"field": c["field"], "oldValue": c["old"], "newValue": c["new"]} for c in changed["changes"]]}]
    assert service.call("POST", f"{model}/user-edits", json={"origin": "dxf-upload", "events": events}).json()["appended"] == 1
    entry = service.call("GET", f"{model}/history").json()[-1]
    assert (entry["origin"], entry["guid"], entry["modifiedBy"]) == ("dxf-upload", "label-living", "USER")
    assert service.call("POST", f"{model}/diff/upload", files={"file": ("junk.dxf", b"not a drawing")}).status_code == 422
