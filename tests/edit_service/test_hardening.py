"""The edit service as an attacker and a careless client meet it: what a build script may not do to the host,
inputs that must be refused, retries and concurrency, cancel, deleted models."""

import json
import shutil
import socket
import threading
import time

import psutil
import pytest
import requests

from edit_service.engine.errors import Conflict, Invalid, NotFound, RunFailed
from edit_service.engine.staging import MAX_STATES
from edit_service.engine.workflow import Editor
from tests.edit_service.conftest import MODEL_ID, example
from tests.edit_service.test_api import EditService
from tests.helpers import poll
from tests.processes import still_running

pytestmark = pytest.mark.heavy

SYMLINKED_OUTPUT = '''import os
import script_lib as sl

PARAMS = {}


def build(params, out_path):
    sl.save(sl.new_model("decoy"), "server_config.json")
    os.symlink("/proc/self/cwd/server_config.json", out_path)
'''

FORGED_MAP = '''import callsites
import script_lib as sl

PARAMS = {}


def build(params, out_path):
    model = sl.new_model("forged")
    sl.create_entity(model, "IfcWall", "wall-a", Name="A")
    sl.create_entity(model, "IfcWall", "wall-b", Name="B")
    callsites._sites["wall-b"] = dict(callsites._sites["wall-a"])  # points wall-b at wall-a's call
    sl.save(model, out_path)
'''

SLEEPING = '''import time
import script_lib as sl

PARAMS = {"seconds": 20}


def build(params, out_path):
    time.sleep(params["seconds"])
    sl.save(sl.new_model("slow"), out_path)
'''


def test_a_symlinked_out_ifc_is_never_published(editor, data_dir, tmp_path, monkeypatch):
    secret = tmp_path / "server_config.json"
    secret.write_text('{"apiToken": "TOP-SECRET-TOKEN"}')
    monkeypatch.chdir(tmp_path)  # where /proc/self/cwd points for the host
    editor.stage(script=SYMLINKED_OUTPUT)
    with pytest.raises(RunFailed):
        editor.run()
    model_ifc = data_dir / "models" / MODEL_ID / "model.ifc"
    assert not model_ifc.exists() and not model_ifc.is_symlink()
    assert not any("TOP-SECRET" in p.read_text(errors="ignore") for p in (data_dir / "models").rglob("*") if p.is_file() and not p.is_symlink())


def test_a_forged_call_site_is_not_trusted(editor):
    editor.stage(script=FORGED_MAP)
    editor.run()
    from edit_service.sandbox.script_lib import guid_for

    forged = editor.locate(guid_for("wall-b"))
    assert forged["origin"] == "traced"
    with pytest.raises(Invalid):
        editor.edit_call("wall-b", "Name", "C")
    assert editor.locate(guid_for("wall-a"))["origin"] == "literal"


@pytest.mark.parametrize(
    "literal, problem",
    [("{1, 2}", "set"), ("(1, 2)", "tuple"), ("b'x'", "bytes"), ("1j", "complex"), ("float('nan')", "literal"), ("{1: 'a'}", "key")],
)
def test_params_must_be_json_values(editor, literal, problem):
    script = example("small_house").replace('"fire_rating": "F30",', f'"fire_rating": "F30", "bad": {literal},')
    with pytest.raises(Invalid) as refused:
        editor.stage(script=script)
    assert problem in refused.value.detail
    assert editor.script_state()["source"] is None


def test_a_deeply_nested_script_is_refused_not_crashing(editor):
    script = example("small_house").replace('"name": "Small house",', '"name": "Small house", "deep": ' + "[" * 3000 + "]" * 3000 + ",")
    with pytest.raises(Invalid):
        editor.stage(script=script)


def test_the_saved_script_never_falls_off_the_staging_chain(editor):
    editor.stage(script=example("small_house"))
    editor.save()
    params = editor.params()
    for index in range(MAX_STATES + 3):
        editor.stage(params={**params, "length": 10.0 + index})
    state = editor.script_state()["staging"]
    assert state["steps"] == MAX_STATES + 1
    for _ in range(MAX_STATES):
        editor.undo()
    assert editor.current_script()[0] == editor.versions.script("v1")
    with pytest.raises(Conflict):
        editor.undo()


def test_unknown_versions_like_v0_are_not_found(editor):
    editor.stage(script=example("small_house"))
    editor.save()
    for version in ("v0", "v00", "v01", "v9"):
        with pytest.raises(NotFound):
            editor.rollback(version)
        with pytest.raises(NotFound):
            editor.semantic_diff("v1", version)


def test_a_broken_earlier_snapshot_gives_no_diff_but_the_run_succeeds(editor, data_dir):
    editor.stage(script=example("small_house"))
    editor.run()
    (data_dir / "models" / MODEL_ID / "script" / "current.snapshot.json").write_text("[1, 2]")
    params = editor.params()
    editor.stage(params={**params, "fire_rating": "F60"})
    assert editor.run()["semanticDiff"] is None


def test_a_save_repeating_its_request_id_answers_the_same_version(editor):
    editor.stage(script=example("small_house"))
    first = editor.save(note="v1", request_id="save-1")
    again = editor.save(note="v1", request_id="save-1")
    assert again["replayed"] is True and again["version"] == first["version"] == "v1"
    assert [v["version"] for v in editor.version_list()["versions"]] == ["v1"]
    assert "requestId" not in first


def test_a_writer_waits_a_bounded_time_for_the_lock(data_dir, sandbox):
    patient, impatient = Editor(data_dir, sandbox, MODEL_ID), Editor(data_dir, sandbox, MODEL_ID, lock_timeout=0.3)
    patient.stage(script=example("small_house"))
    with patient.files.lock():
        started = time.monotonic()
        with pytest.raises(Conflict) as busy:
            impatient.undo()
        assert time.monotonic() - started < 5 and "another operation" in busy.value.detail


def test_a_deleted_model_is_not_brought_back(editor, data_dir):
    editor.stage(script=example("small_house"))
    shutil.rmtree(data_dir / "models" / MODEL_ID)
    for action in (editor.run, editor.undo, lambda: editor.stage(script=example("small_house")), editor.discard):
        with pytest.raises(NotFound):
            action()
    assert not (data_dir / "models" / MODEL_ID).exists()


def test_cancel_kills_a_running_build_and_publishes_nothing(editor, data_dir):
    editor.stage(script=example("small_house"))
    editor.save()
    before = (data_dir / "models" / MODEL_ID / "model.ifc").read_bytes()
    editor.stage(script=SLEEPING)
    staged = editor.script_state()
    failures = []
    runner = threading.Thread(target=lambda: failures.append(pytest.raises(RunFailed, editor.run)))
    runner.start()
    poll(lambda: list(editor.files.runs_dir.glob("*.pid")), bool, timeout=30)
    time.sleep(0.5)  # the build's own processes start
    build = [psutil.Process(json.loads(pid_file.read_text())["pid"]) for pid_file in editor.files.runs_dir.glob("*.pid")]
    tree = build + [child for process in build for child in process.children(recursive=True)]
    assert editor.cancel_runs() == {"cancelled": 1}
    runner.join(30)  # the sleeping build would take 60 s
    assert not runner.is_alive()
    assert "cancelled" in failures[0].value.detail
    assert (data_dir / "models" / MODEL_ID / "model.ifc").read_bytes() == before
    assert editor.script_state() == staged
    assert still_running(tree, timeout=5) == []  # only this build's processes: other tests keep sandboxes warm
    assert editor.cancel_runs() == {"cancelled": 0}


@pytest.fixture(scope="module")
def hardened(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("hardened")
    (data_dir / "models" / MODEL_ID).mkdir(parents=True)
    running = EditService(data_dir, EDIT_ALLOWED_HOSTS="edit.internal").start()
    yield running
    running.stop()


def test_a_foreign_host_header_is_refused(hardened):
    assert requests.get(f"{hardened.url}/health", headers={"Host": "evil.example"}, timeout=10).status_code == 400
    assert requests.get(f"{hardened.url}/health", headers={"Host": "edit.internal"}, timeout=10).json() == {"status": "ok"}
    assert requests.get(f"{hardened.url}/health", headers={"Host": "localhost"}, timeout=10).json() == {"status": "ok"}


def test_an_oversized_body_is_refused_before_it_is_read(hardened):
    port = int(hardened.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        secret = "".join(f"{name}: {value}\r\n" for name, value in hardened.secret_headers.items())
        sock.sendall(f"PUT /models/{MODEL_ID}/script HTTP/1.1\r\nHost: 127.0.0.1\r\n{secret}Content-Type: application/json\r\nContent-Length: 900000000\r\n\r\n".encode())
        answer = sock.recv(4096).decode()
    assert answer.startswith("HTTP/1.1 413") and "limit" in answer


def test_cancel_route_and_save_request_id_over_http(hardened):
    base = f"/models/{MODEL_ID}"
    assert hardened.call("POST", f"{base}/script/cancel").json() == {"cancelled": 0}
    assert hardened.call("POST", "/models/m_ffffffffffffffff/script/cancel").status_code == 404
    hardened.call("PUT", f"{base}/script", json={"script": example("small_house")})
    first = hardened.call("POST", f"{base}/script/save", json={"requestId": "r-1"}).json()
    again = hardened.call("POST", f"{base}/script/save", json={"requestId": "r-1"}).json()
    assert (first["version"], again["version"], again["replayed"]) == ("v1", "v1", True)
    assert hardened.call("POST", f"{base}/script/save", json={"requestId": "bad id!"}).status_code == 422
    assert hardened.call("POST", f"{base}/script/rollback", json={"version": "v0"}).status_code == 404
    assert hardened.call("PUT", f"{base}/script", json={"script": example("small_house").replace('"length": 10.0', '"length": {1, 2}')}).status_code == 422
    assert json.loads(hardened.call("GET", "/openapi.json").text)["paths"]["/models/{model_id}/script/cancel"]


def test_without_a_cgroup_runs_are_refused_with_503_and_change_nothing(tmp_path):
    data_dir = tmp_path / "data"
    (data_dir / "models" / MODEL_ID).mkdir(parents=True)
    not_a_cgroup = tmp_path / "not-a-cgroup"
    not_a_cgroup.mkdir()
    refusing = EditService(data_dir, EDIT_SANDBOX_CGROUP_ROOT=str(not_a_cgroup)).start()
    try:
        base = f"/models/{MODEL_ID}"
        assert refusing.call("PUT", f"{base}/script", json={"script": example("small_house")}).status_code == 200
        staged = refusing.call("GET", f"{base}/script").json()
        answer = refusing.call("POST", f"{base}/script/run")
        assert answer.status_code == 503
        assert "isolation unavailable" in answer.json()["detail"] and "EDIT_SANDBOX_ALLOW_NO_CGROUP" in answer.json()["detail"]
        assert refusing.call("GET", f"{base}/script").json() == staged
        folder = data_dir / "models" / MODEL_ID
        assert not (folder / "model.ifc").exists() and not list((folder / "script").glob("runs/*"))
        assert refusing.call("POST", f"{base}/script/save").status_code == 503
        assert refusing.call("GET", f"{base}/versions").json()["versions"] == []
    finally:
        refusing.stop()
    log = next(data_dir.glob("edit-*.log")).read_text()
    assert "isolation unavailable" in log  # said once at startup


def test_the_operator_may_allow_runs_without_a_cgroup(tmp_path):
    data_dir = tmp_path / "data"
    (data_dir / "models" / MODEL_ID).mkdir(parents=True)
    allowed = EditService(data_dir, EDIT_SANDBOX_CGROUP_ROOT=str(tmp_path), EDIT_SANDBOX_ALLOW_NO_CGROUP="1").start()
    try:
        base = f"/models/{MODEL_ID}"
        allowed.call("PUT", f"{base}/script", json={"script": example("small_house")})
        assert allowed.call("POST", f"{base}/script/run").status_code == 200
    finally:
        allowed.stop()
    assert "WITHOUT a cgroup" in next(data_dir.glob("edit-*.log")).read_text()
