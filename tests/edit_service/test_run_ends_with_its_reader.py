"""A sandboxed run ends, with every process it started, once the service that reads its outputs is gone: bubblewrap
binds a sandbox to its starter only after setting it up (containers/bubblewrap#633), so a service killed during
that set-up left a build script running with no time limit."""

import os
import signal
import subprocess
import sys

import psutil
import pytest

from edit_service.engine.sandbox import CODE_MOUNT, SANDBOX_CODE_DIR
from edit_service.sandbox.outputs import READER_GONE
from sandboxing import bwrap
from tests.processes import read_line, spawn_chain, still_running, stop

pytestmark = pytest.mark.heavy

RUN = """
import subprocess, sys, time
from outputs import end_with_the_reader
end_with_the_reader(int(sys.argv[1]))
subprocess.Popen(["sleep", "600"])
print("running", flush=True)
time.sleep(600)
"""


def _start(outputs_write_end: int) -> subprocess.Popen:
    sandbox = bwrap.command("bwrap", program=[sys.executable, "-c", RUN, str(outputs_write_end)],
                            mounts=[*bwrap.python_mounts(), *bwrap.ro_bind(SANDBOX_CODE_DIR, CODE_MOUNT)], workdir="/",
                            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": CODE_MOUNT})
    try:
        return spawn_chain(sandbox, pass_fds=(outputs_write_end,), stdout=subprocess.PIPE, text=True)
    finally:
        os.close(outputs_write_end)


def test_a_run_whose_reader_closes_ends_with_all_it_started():
    read_end, write_end = os.pipe()
    run = _start(write_end)
    try:
        assert read_line(run.stdout, timeout=60) == "running\n"
        started = psutil.Process(run.pid).children(recursive=True)
        assert any(process.name() == "sleep" for process in started)
        os.close(read_end)
        read_end = None
        assert run.wait(timeout=30) == READER_GONE
        assert still_running(started, timeout=10) == []
    finally:
        if read_end is not None:
            os.close(read_end)
        stop(run, signal.SIGKILL)


def test_a_run_whose_reader_is_gone_before_it_starts_runs_nothing():
    read_end, write_end = os.pipe()
    os.close(read_end)
    run = _start(write_end)
    try:
        assert run.wait(timeout=60) == READER_GONE
        assert run.stdout.read() == ""
    finally:
        stop(run, signal.SIGKILL)
