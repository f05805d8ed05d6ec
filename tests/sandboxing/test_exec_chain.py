"""A sandbox's exec chain ends with the process that started it, even when that process dies before bubblewrap has
bound the sandbox to it (bubblewrap sets its parent-death signal only after cloning the sandbox)."""

import os
import signal
import subprocess
import sys

import psutil
import pytest

from sandboxing import bwrap
from sandboxing.limits import PROJECT_ROOT
from sandboxing.probe import run_sandbox
from tests.helpers import poll
from tests.processes import read_line, spawn, spawn_chain, still_running, stop

pytestmark = pytest.mark.heavy

# stands for a bubblewrap that has not yet set its parent-death signal: it never sets one
SLOW_BWRAP = '#!/bin/sh\ntouch "{started}"\nexec sleep 600\n'

STARTER = """
import os, shutil, sys, time
from tests.processes import spawn_chain
chain = spawn_chain([sys.argv[1], "program"])
sleep = os.path.realpath(shutil.which("sleep"))
while os.readlink(f"/proc/{chain.pid}/exe") != sleep:
    time.sleep(0.01)
print(chain.pid, flush=True)
time.sleep(600)
"""


def _slow_bwrap(tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text(SLOW_BWRAP.format(started=tmp_path / "started"))
    fake.chmod(0o755)
    return fake


def _end(process: psutil.Process | None) -> None:
    """Kills a chain's process left running by a failed test (known by its pid and start time, not its pid alone)."""
    if process is not None and still_running([process], timeout=0):
        process.kill()


def test_a_sandbox_whose_starter_dies_before_bubblewrap_is_bound_to_it_is_killed(tmp_path):
    starter = spawn([sys.executable, "-c", STARTER, str(_slow_bwrap(tmp_path))],
                    stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    chain = None
    try:
        chain = psutil.Process(int(read_line(starter.stdout, timeout=60)))
        assert chain.name() == "sleep"
        os.kill(starter.pid, signal.SIGKILL)
        starter.wait(timeout=10)
        assert still_running([chain], timeout=10) == []
    finally:
        stop(starter)
        _end(chain)


def test_a_chain_started_by_another_process_than_its_maker_stops_before_bubblewrap(tmp_path):
    """What the chain sees when its starter died before setpriv bound it: a parent that is not the maker."""
    through_a_shell = ["/bin/sh", "-c", '"$@"; exit $?', "shell"]  # the shell, not this process, is the parent
    shell = spawn_chain([str(_slow_bwrap(tmp_path)), "program"], through=through_a_shell)
    try:
        assert shell.wait(timeout=30) == bwrap.PARENT_GONE
    finally:
        stop(shell, signal.SIGKILL)
    assert not (tmp_path / "started").exists()


def test_a_chain_started_by_its_maker_runs_bubblewrap(tmp_path):
    chain = spawn_chain([str(_slow_bwrap(tmp_path)), "program"])
    try:
        poll(lambda: (tmp_path / "started").exists(), bool, timeout=30)
    finally:
        stop(chain, signal.SIGKILL)


def test_the_chain_s_own_variables_do_not_reach_the_sandbox():
    """bwrap's pid 1 keeps the environment bwrap was started with, and the program can read it (/proc/1/environ)."""
    sandbox = bwrap.command("bwrap", program=[sys.executable, "-S", "-c", "print(open('/proc/1/environ').read())"],
                            mounts=bwrap.python_mounts(), workdir="/", env={"PATH": "/usr/bin:/bin"})
    finished = run_sandbox(sandbox, rlimits={}, timeout=60)
    assert finished.returncode == 0, finished.stderr
    variables = {entry.split("=", 1)[0] for entry in finished.stdout.strip().split("\0") if entry}
    assert variables and not variables & {"SANDBOX_PARENT", "SANDBOX_CGROUP_PROCS", "PWD", "OLDPWD"}, variables


def test_a_machine_without_setpriv_is_told_which_package_to_install(monkeypatch):
    from sandboxing import probe

    found = probe.shutil.which
    monkeypatch.setattr(probe.shutil, "which", lambda name: None if name == "setpriv" else found(name))
    assert probe.missing_tool("bwrap") == "'setpriv' not found; install the util-linux package"
    monkeypatch.setattr(probe.shutil, "which", found)
    assert probe.missing_tool("bwrap") is None
