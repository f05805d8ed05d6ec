"""The edit service killed with -9 in the middle of a build run (real processes over HTTP): its sandbox ends with it,
and the run cgroup nobody removed is gone once the service has started again."""

import threading
from pathlib import Path

import psutil
import pytest
import requests

from sandboxing import cgroups
from tests.edit_service.conftest import MODEL_ID
from tests.edit_service.test_api import EditService
from tests.edit_service.test_hardening import SLEEPING
from tests.helpers import poll, skip_without_run_cgroups
from tests.processes import still_running

pytestmark = pytest.mark.e2e


def _run_cgroup_folders(service_pid: int) -> list[Path]:
    """The run cgroup folders of the service's sandboxed processes (from /proc/<pid>/cgroup)."""
    folders = set()
    for process in psutil.Process(service_pid).children(recursive=True):
        try:
            lines = Path(f"/proc/{process.pid}/cgroup").read_text().splitlines()
        except OSError:
            continue
        for _, controllers, path in (line.split(":", 2) for line in lines):
            if Path(path).name.startswith(cgroups.NAME_PREFIX):
                folders.add(cgroups.DEFAULT_ROOT / (controllers or "") / path.lstrip("/"))
    return sorted(folders)


def _run_until_the_service_dies(service: EditService, path: str) -> None:
    try:
        service.call("POST", path)
    except requests.ConnectionError:
        pass  # the service was killed mid-run


def test_a_run_cgroup_left_by_a_service_killed_with_9_is_gone_after_its_restart(tmp_path):
    skip_without_run_cgroups()
    (tmp_path / "models" / MODEL_ID).mkdir(parents=True)
    service = EditService(tmp_path).start()
    restarted = None
    try:
        base = f"/models/{MODEL_ID}"
        assert service.call("PUT", f"{base}/script", json={"script": SLEEPING}).status_code == 200
        threading.Thread(target=_run_until_the_service_dies, args=(service, f"{base}/script/run"), daemon=True).start()
        folders = poll(lambda: _run_cgroup_folders(service.process.pid), bool, timeout=60)
        sandboxed = psutil.Process(service.process.pid).children(recursive=True)
        service.process.kill()  # only the service: its sandbox is in a session of its own
        service.process.wait()
        assert still_running(sandboxed, timeout=30) == []  # --die-with-parent
        restarted = EditService(tmp_path).start()
        assert [folder for folder in folders if folder.exists()] == []
    finally:
        service.stop()
        if restarted is not None:
            restarted.stop()
