"""`make run` as a user runs it: everything starts in the foreground (under supervisord), honours VIEWER_CONFIG /
VIEWER_DATA_DIR / EDIT_SERVICE_PORT (so a second instance runs beside the first), and SIGTERM stops every process.
Restarts of dead processes: test_supervisor_e2e.py."""

import json
import os
import signal
import stat
import subprocess
import time

import psutil
import pytest
import requests

from core.service_secret import HEADER as SECRET_HEADER
from core.service_secret import read_secret
from tests.e2e.stack import ROOT, free_port, seed_migrated_database
from tests.helpers import MINIMAL_IFC
from tests.processes import still_running

pytestmark = pytest.mark.e2e


def start_instance(tmp_path, name, migrated=False):
    data_dir = tmp_path / name
    data_dir.mkdir()
    if migrated:
        seed_migrated_database(data_dir)
    port, edit_port = free_port(), free_port()
    config = data_dir / "server_config.json"
    config.write_text(json.dumps({"port": port, "dataDir": str(data_dir)}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIEWER_", "DJANGO_", "EDIT_", "MAKE"))}
    env.update(VIEWER_CONFIG=str(config), VIEWER_DATA_DIR=str(data_dir), EDIT_SERVICE_PORT=str(edit_port))
    # appended to: supervisord writes its children's output through /dev/stdout, a second descriptor of the file
    with open(data_dir / "make.log", "ab") as log:
        process = subprocess.Popen(["make", "run"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return process, port, edit_port, data_dir


def wait_up(url, process, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "make run exited early"
        try:
            return requests.get(url, timeout=2)
        except requests.RequestException:
            time.sleep(0.3)
    raise TimeoutError(url)


def conversion_workers(pid: int) -> list[psutil.Process]:
    """The conversion workers under a `make run`; a short-lived descendant that ends while they are looked at is left
    out (a sandbox probe, a zygote's child)."""
    found = []
    for descendant in psutil.Process(pid).children(recursive=True):
        try:
            if descendant.name().startswith("python") and "conversion_worker" in " ".join(descendant.cmdline()):
                found.append(descendant)
        except psutil.NoSuchProcess:
            continue
    return found


def test_two_instances_side_by_side_and_sigterm_stops_everything(tmp_path):
    first = start_instance(tmp_path, "a")  # from nothing, as a new user's: make run migrates
    second = start_instance(tmp_path, "b", migrated=True)
    try:
        for process, port, edit_port, data_dir in (first, second):
            assert wait_up(f"http://127.0.0.1:{port}/api/v1/models", process).json()["code"] == 0
            assert wait_up(f"http://127.0.0.1:{edit_port}/health", process).json() == {"status": "ok"}
            assert (data_dir / "viewer.sqlite3").exists()
            # supervisord's control socket: only in the data directory's run/ folder, owner only
            for path in (data_dir / "run", data_dir / "run" / "supervisor.sock"):
                assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
        # the edit service of each instance sees that instance's data directory
        process, port, edit_port, data_dir = first
        upload = requests.post(f"http://127.0.0.1:{port}/api/v1/models", files={"file": ("t.ifc", MINIMAL_IFC)}).json()
        model_id = upload["data"]["id"]
        # each with its own data directory's secret, read as a direct caller on the host does
        secret = {SECRET_HEADER: read_secret(data_dir)}
        assert requests.get(f"http://127.0.0.1:{edit_port}/models/{model_id}/versions", headers=secret).status_code == 200
        assert requests.get(f"http://127.0.0.1:{second[2]}/models/{model_id}/versions", headers={SECRET_HEADER: read_secret(second[3])}).status_code == 404
        assert len(conversion_workers(process.pid)) == 2
    finally:
        survivors = []
        for process, *_ in (first, second):
            if process.poll() is not None:
                continue  # it ended early (the failure above says so): nothing of it to stop
            children = psutil.Process(process.pid).children(recursive=True)
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
            alive = still_running(children, timeout=30)
            survivors += alive
            for leftover in alive:
                leftover.kill()
        assert survivors == []
