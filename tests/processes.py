"""Processes started by tests: each in its own process group, stopped with its whole group, and a net at the end
of the session for anything that slipped through (a test that failed or was interrupted, a grandchild that left
its group).

Every process of this session inherits TEST_SESSION_MARKER from the environment, so the survivors can be found by
it; the session fails when it had to kill any (see tests/conftest.py)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
import uuid

import psutil

MARKER_NAME = "TEST_SESSION_MARKER"
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER and not os.environ.get(MARKER_NAME, "").endswith(f"-{_WORKER}"):
    # a pytest-xdist worker marks its own processes: its sweep at the end must not reach the other workers' ones (a
    # process a worker starts that imports this module keeps the worker's marker; a pytest-xdist run started by a test
    # would share its workers' names with the outer ones, and so their markers: no test starts one)
    os.environ[MARKER_NAME] = f"{uuid.uuid4().hex}-{_WORKER}"
MARKER = os.environ.setdefault(MARKER_NAME, uuid.uuid4().hex)


def spawn(args: list[str], **kwargs) -> subprocess.Popen:
    env = kwargs.pop("env", None)
    if env is not None:
        env = {**env, MARKER_NAME: MARKER}
    return subprocess.Popen(args, start_new_session=True, env=env, **kwargs)


def spawn_chain(sandbox: list[str], *, pass_fds: tuple[int, ...] = (), through=(), **kwargs) -> subprocess.Popen:
    """Starts a sandbox command through the exec chain a worker uses (no limits, no cgroup), by this process or by
    `through` (a prefix such as a shell, which is then the chain's parent); the seccomp program's descriptor is
    closed here once the child has it."""
    from sandboxing import bwrap, seccomp

    seccomp_fd = seccomp.program_fd()
    try:
        argv, chain_env = bwrap.limited(sandbox, rlimits={}, cgroup=None, seccomp_fd=seccomp_fd)
        return spawn([*through, *argv], env={"PATH": os.environ["PATH"], **chain_env},
                     pass_fds=(*pass_fds, seccomp_fd), **kwargs)
    finally:
        os.close(seccomp_fd)


def read_line(stream, timeout: float) -> str:
    """The next line of a child's output pipe; TimeoutError when none comes within `timeout` s (readline alone would
    wait for ever on a child that hangs)."""
    if not select.select([stream], [], [], timeout)[0]:
        raise TimeoutError(f"no line in {timeout} s")
    return stream.readline()


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 15) -> None:
    """Signals the process's group, waits, then kills whatever of the group is left."""
    if process.poll() is None:
        signal_group(process.pid, sig)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
    signal_group(process.pid, signal.SIGKILL)
    process.wait()


def still_running(processes: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Waits up to `timeout` s for `processes` to end; those still running then (a zombie has ended). A process is
    known by its pid and start time, not its pid alone: a run starts thousands of processes and threads and the
    kernel hands a pid out again within seconds (pid_max is 32768 here), and psutil.wait_procs, which waits on
    whatever process holds the pid now, took another test's sandbox for a survivor."""
    deadline = time.monotonic() + timeout
    while True:
        running = [process for process in processes if _running(process)]
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.05)


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE  # is_running: the same start time
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:  # cannot tell (hidepid): not taken for ended
        return True


def signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def session_survivors() -> list[psutil.Process]:
    me = os.getpid()
    found = []
    for process in psutil.process_iter(["pid"]):
        if process.pid == me:
            continue
        try:
            if process.environ().get(MARKER_NAME) == MARKER:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def kill_survivors() -> list[str]:
    """Kills every process still carrying this session's marker; returns their command lines."""
    survivors = session_survivors()
    described = []
    for process in survivors:
        try:
            described.append(f"{process.pid}: {' '.join(process.cmdline())[:200]}")
            process.kill()
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    still_running(survivors, timeout=10)
    return described
