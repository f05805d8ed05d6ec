"""No process started by the suite outlives it, also when the test run itself is killed without a chance to clean
up (CI timeout, kill -9): the services the tests start end with their parent."""

import os
import signal
import subprocess
import sys
import uuid

import psutil
import pytest

from tests.e2e.stack import ROOT
from tests.processes import MARKER_NAME

pytestmark = pytest.mark.e2e

RUN_A_STACK = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from tests.e2e.stack import Stack
Stack(Path(sys.argv[1]), workers=1).start()
print("up", flush=True)
time.sleep(600)
"""


def processes_marked(marker: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(MARKER_NAME) == marker:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def test_services_end_when_the_test_run_is_killed(tmp_path):
    marker = uuid.uuid4().hex
    runner = subprocess.Popen(
        [sys.executable, "-c", RUN_A_STACK, str(tmp_path), str(ROOT)],
        # not as an xdist worker: tests.processes would give it a marker of its own
        env={**{k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}, MARKER_NAME: marker},
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        assert runner.stdout.readline().strip() == "up"
        started = processes_marked(marker)
        names = " ".join(" ".join(p.cmdline()) for p in started)
        assert "run_gateway" in names and "conversion_worker" in names and "edit_service" in names
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        gone, alive = psutil.wait_procs(started, timeout=30)
        assert alive == [], [" ".join(p.cmdline()) for p in alive]
    finally:
        for process in processes_marked(marker):
            process.kill()
