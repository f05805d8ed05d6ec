"""IDS checks on the real processes: gateway, edit service, conversion worker and a check worker
(`manage.py check_worker`), over HTTP. Saved versions are checked through the edit service's new route
GET /models/{id}/versions/{version}/ifc (an older version is rebuilt from its script); a check worker killed
mid-check leaves the check to another worker."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import time

import psutil
import pytest
import requests

from tests.checks.conftest import fire_ids
from tests.e2e.stack import Stack
from tests.helpers import poll, sample

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    running = Stack(tmp_path_factory.mktemp("checks-e2e"), workers=1).start()
    running.start_check_worker()
    yield running
    running.stop()


def data(response: requests.Response):
    body = response.json()
    assert body["code"] == 0, body
    return body["data"]


def wait_check(stack: Stack, model_id: str, check_id: str, timeout: float = 300, until=("done", "failed")) -> dict:
    return poll(lambda: data(stack.api("GET", f"/api/v1/models/{model_id}/checks/{check_id}")), lambda check: check["status"] in until, timeout)


def test_versions_are_checked_through_the_edit_service(stack):
    project = data(stack.api("POST", "/api/v1/chat/projects", json={"title": "Checked", "kind": "ifc"}))
    (model_id,) = project["models"]
    v1 = stack.edit_call("GET", f"/models/{model_id}/versions/v1/ifc", timeout=60)
    assert v1.status_code == 200 and v1.headers["Content-Type"] == "application/x-step" and v1.content.startswith(b"ISO-10303-21;")
    for path in (f"/models/{model_id}/versions/v9/ifc", f"/models/{model_id}/versions/x/ifc", "/models/m_0000000000000000/versions/v1/ifc", "/models/bad/versions/v1/ifc"):
        response = stack.edit_call("GET", path, timeout=30)
        assert response.status_code == 404 and "detail" in response.json(), path

    params = data(stack.api("GET", f"/api/v1/models/{model_id}/script/params"))
    params = params.get("params", params)
    data(stack.api("PUT", f"/api/v1/models/{model_id}/script", json={"params": {**params, "external_wall_fire_rating": "REI60"}}))
    assert data(stack.api("POST", f"/api/v1/models/{model_id}/script/save", json={"note": "fire ratings"}))["version"] == "v2"
    rebuilt = stack.edit_call("GET", f"/models/{model_id}/versions/v1/ifc")  # v1 is not materialised any more
    assert rebuilt.status_code == 200 and b"'F30'" in rebuilt.content and b"'REI60'" not in rebuilt.content

    assert data(stack.api("PUT", f"/api/v1/projects/{project['projectId']}/ids/fire.ids", data=fire_ids(), headers={"Content-Type": "application/xml"}))["created"]
    results = {}
    for version in ("v1", "v2", "current"):
        started = data(stack.api("POST", f"/api/v1/models/{model_id}/checks", json={"ids": ["fire.ids"], "version": version}))
        check = wait_check(stack, model_id, started["checkId"])
        assert check["status"] == "done", check["error"]
        results[version] = check["result"]["specifications"][0]
    assert (results["v1"]["status"], results["v1"]["failedElements"], results["v1"]["applicable"]) == ("fail", 4, 4)
    assert {f["found"] for f in results["v1"]["failures"]} == {"F30"}
    assert results["v2"]["status"] == "pass" and results["current"]["status"] == "pass"

    again = data(stack.api("POST", f"/api/v1/models/{model_id}/checks", json={"ids": ["fire.ids"], "version": "v1"}))
    assert (again["status"], again["cached"]) == ("done", True)
    unknown = stack.api("POST", f"/api/v1/models/{model_id}/checks", json={"ids": ["fire.ids"], "version": "v9"}).json()
    assert unknown["code"] == 40400 and "v9" in unknown["message"]
    assert len(data(stack.api("GET", f"/api/v1/models/{model_id}/checks"))) == 3


def attempts(stack: Stack, check_id: str) -> int:
    with sqlite3.connect(stack.data_dir / "viewer.sqlite3") as database:
        return database.execute("SELECT attempts FROM checks_app_check WHERE id = ?", (check_id,)).fetchone()[0]


def stop_check_processes(stack: Stack, name: str) -> None:
    """SIGSTOP to every process the check worker started (its sandboxed zygote and the spare child waiting for the
    next check), again until no new one appears, once the worker polls its queue (its zygote warmed): the worker
    still claims a check and hands it over, and the check stays running until the worker is killed."""
    stack.wait_worker_polling(name)
    worker = psutil.Process(stack.processes[name].pid)
    stopped: set[int] = set()
    while new := [child for child in worker.children(recursive=True) if child.pid not in stopped]:
        for child in new:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.send_signal(signal.SIGSTOP)
            stopped.add(child.pid)
        time.sleep(0.05)


def test_a_check_worker_killed_mid_check_leaves_the_check_to_another(stack):
    with open(sample("duplex.ifc"), "rb") as handle:
        model_id = data(stack.api("POST", "/api/v1/models", files={"file": ("duplex.ifc", handle, "application/octet-stream")}))["id"]
    ids = {"ids": ("fire.ids", fire_ids().replace(b'ifcVersion="IFC4"', b'ifcVersion="IFC2X3"').replace(b"IFCWALL", b"IFCWALLSTANDARDCASE"), "application/xml")}
    stop_check_processes(stack, "checks0")  # a check of duplex takes ~0.1 s: it would end before the kill
    started = data(stack.api("POST", f"/api/v1/models/{model_id}/checks", files=ids))
    check = wait_check(stack, model_id, started["checkId"], timeout=60, until=("running", "done", "failed"))
    assert check["status"] == "running", check
    stack.kill("checks0", signal.SIGKILL)  # the worker and, through PR_SET_PDEATHSIG, its check processes (stopped or not)
    stack.start_check_worker("checks1")
    check = wait_check(stack, model_id, started["checkId"])
    assert check["status"] == "done" and attempts(stack, started["checkId"]) == 2
    assert check["result"]["specifications"][0]["applicable"] == 56 and check["result"]["specifications"][0]["status"] == "fail"
