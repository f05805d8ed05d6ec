"""Run cgroups left behind by an owner killed with -9 mid-run (nobody is left to remove them): the sweep at a
service's start and the one before every new run cgroup remove them, in any process; a living owner's run cgroups
are never touched. Real cgroups (the root the services use) and a real sandboxed process in the run cgroup."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from sandboxing import cgroups
from tests.helpers import skip_without_run_cgroups
from tests.processes import still_running

ROOT = Path(__file__).resolve().parents[2]
# an owner process: makes a run cgroup, starts a sandboxed `sleep` in it (the services' exec chain and filter), prints
# the cgroup's folders once the sandbox is running in it, and waits to be killed
OWNER = textwrap.dedent("""
    import json, os, subprocess, sys
    from sandboxing import bwrap, cgroups, seccomp
    from tests.helpers import poll, skip_without_run_cgroups
    cgroup = cgroups.create(16, 64 * 1024 * 1024)
    filter_fd = seccomp.program_fd()
    sandbox = bwrap.command("bwrap", program=["sleep", "600"], mounts=[], workdir="/", env={"PATH": "/usr/bin:/bin"})
    argv, chain_env = bwrap.limited(sandbox, rlimits={}, cgroup=cgroup, seccomp_fd=filter_fd)
    subprocess.Popen(argv, env={"PATH": os.environ["PATH"], **chain_env}, pass_fds=(filter_fd,))
    poll(cgroup.pids, lambda pids: len(pids) >= 2, timeout=60)  # bwrap and its sandbox joined
    print(json.dumps([str(d) for d in cgroup.directories]), flush=True)
    sys.stdin.read()
""")


@pytest.fixture(autouse=True)
def writable_cgroups():
    skip_without_run_cgroups()


@pytest.fixture
def owner():
    """A running owner of a run cgroup with a sandbox in it: (its process, the cgroup's folders)."""
    process = subprocess.Popen([sys.executable, "-c", OWNER], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        folders = [Path(folder) for folder in json.loads(process.stdout.readline())]
        yield process, folders
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        cgroups.RunCgroup([folder for folder in folders if folder.exists()]).remove()


def _kill_with_9(process: subprocess.Popen, folders: list[Path]) -> None:
    """Kills the owner as `kill -9` does; its sandbox ends with it (--die-with-parent), its run cgroup stays (until
    a sweep: other processes on this machine running sandboxes sweep it too, so that is not asserted here)."""
    sandboxed = [psutil.Process(pid) for pid in cgroups.RunCgroup(list(folders)).pids()]
    process.kill()
    process.wait()
    assert still_running(sandboxed, timeout=30) == []


def test_the_sweep_at_a_services_start_removes_the_cgroup_of_an_owner_killed_with_9(owner):
    process, folders = owner
    _kill_with_9(process, folders)
    cgroups.remove_stale()
    assert [folder for folder in folders if folder.exists()] == []


def test_the_next_run_in_a_service_that_kept_running_removes_it(owner):
    process, folders = owner
    _kill_with_9(process, folders)
    cgroup = cgroups.create(8, 64 * 1024 * 1024)
    try:
        assert [folder for folder in folders if folder.exists()] == []
    finally:
        cgroup.remove()


def test_a_living_owners_run_cgroup_is_left_alone(owner):
    _, folders = owner
    cgroups.remove_stale()
    cgroups.create(8, 64 * 1024 * 1024).remove()
    assert all(folder.is_dir() for folder in folders) and len(cgroups.RunCgroup(list(folders)).pids()) >= 2
