"""The check worker's spare child (`manage.py check_worker`, real processes): a worker stopped with SIGTERM ends its
spare and leaves no run cgroup behind; the run cgroup of one killed with -9 is removed when the next worker starts."""

from __future__ import annotations

import signal
from pathlib import Path

import psutil
import pytest

from tests.e2e.stack import Stack
from tests.e2e.test_sandbox_seccomp_e2e import _run_cgroup_folders
from tests.helpers import poll, skip_without_run_cgroups
from tests.processes import still_running

pytestmark = pytest.mark.e2e


def _catches_sigterm(pid: int) -> bool:
    """Whether the worker's loop has its signal handlers (before that, SIGTERM ends it like SIGKILL)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def test_a_stopped_worker_leaves_no_spare_cgroup_and_a_killed_ones_goes_at_the_next_start(tmp_path):
    skip_without_run_cgroups()
    stack = Stack(tmp_path)
    stack.migrate()
    try:
        worker = stack.start_check_worker("checks0")
        folders = poll(lambda: _run_cgroup_folders(worker.pid), bool, timeout=120)  # its spare child's, once warm
        poll(lambda: _catches_sigterm(worker.pid), bool, timeout=60)
        stack.kill("checks0", signal.SIGTERM)
        assert [folder for folder in folders if folder.exists()] == []

        worker = stack.start_check_worker("checks1")
        folders = poll(lambda: _run_cgroup_folders(worker.pid), bool, timeout=120)
        sandboxed = psutil.Process(worker.pid).children(recursive=True)
        stack.kill("checks1", signal.SIGKILL)  # it removes nothing now: the next start's sweep of stale run cgroups does
        assert still_running(sandboxed, timeout=30) == []  # the sandbox dies with its worker (--die-with-parent)

        stack.start_check_worker("checks2")
        poll(lambda: [folder for folder in folders if folder.exists()], lambda left: left == [], timeout=120)
    finally:
        stack.stop()
