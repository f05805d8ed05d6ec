"""What both sandboxes check before running anything: the tools exist, the seccomp filter can be built and is in force
in a sandbox, a per-run cgroup with memory and pids caps can be made (fail closed: without one, runs are refused
unless the operator opted in explicitly), and the exact sandbox starts (a probe run, remembered; a failed probe is
retried after a while)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sandboxing import bwrap as bwrap_command
from sandboxing import cgroups, seccomp

PROBE_RETRY_SECONDS = 30
FILTER_PROBE_SECONDS = 30
# run in the probe sandbox: the seccomp mode of its own process (2: filtered) and the errno of a denied call
_FILTER_CHECK = """import ctypes, sys
mode = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("Seccomp:"))
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall(int(sys.argv[1]), 0, 0, 0, 0, 0)
print(mode, ctypes.get_errno())
"""


class IsolationUnavailable(Exception):
    """Runs are refused: the sandbox cannot give the isolation it promises. The message says why and what to do."""


def missing_tool(bwrap: str) -> str | None:
    for binary, package in ((bwrap, "bubblewrap"), ("prlimit", "util-linux"), ("setpriv", "util-linux")):
        if shutil.which(binary) is None:
            return f"{binary!r} not found; install the {package} package"
    return None


def isolation_problem(bwrap: str) -> str | None:
    """Why sandboxes cannot start with their full isolation here (a missing tool, a seccomp filter that cannot be
    built or is not in force), or None. The filter check is a sandbox run, done once per process (a failure is
    checked again after a while)."""
    if problem := missing_tool(bwrap):
        return problem
    return _filter_probes.problem(bwrap, lambda: filter_problem(bwrap))


def filter_problem(bwrap: str) -> str | None:
    """Runs a minimal sandbox (the services' isolation and exec chain) in which a program reads its own seccomp mode
    and tries keyctl; the filter is in force when the mode is 2 (filtered) and keyctl failed with EPERM."""
    try:
        keyctl = seccomp.native_number("keyctl")
        checked = run_sandbox(bwrap_command.command(
            bwrap, program=[sys.executable, "-S", "-c", _FILTER_CHECK, str(keyctl)], mounts=bwrap_command.python_mounts(),
            workdir="/", env={"PATH": "/usr/bin:/bin"}), rlimits={}, timeout=FILTER_PROBE_SECONDS)
    except seccomp.FilterUnavailable as exc:
        return str(exc)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the seccomp probe sandbox could not run: {exc}"
    if checked.stdout.split() != ["2", str(errno.EPERM)]:
        found = checked.stderr.strip()[-500:] or f"exit code {checked.returncode}, output {checked.stdout.strip()!r}"
        return f"the seccomp filter is not in force in the sandbox ({found})"
    return None


def run_sandbox(sandbox: list[str], *, rlimits: dict[str, int], timeout: float) -> subprocess.CompletedProcess:
    """Runs a bwrap command line (bwrap.command) to its end through the services' exec chain and seccomp filter,
    without a cgroup, its output captured as text (probes and tests)."""
    filter_fd = seccomp.program_fd()
    try:
        argv, chain_env = bwrap_command.limited(sandbox, rlimits=rlimits, cgroup=None, seccomp_fd=filter_fd)
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, pass_fds=(filter_fd,),
                              timeout=timeout, check=False, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **chain_env})
    finally:
        os.close(filter_fd)


@dataclass(frozen=True)
class CgroupPolicy:
    """Where run cgroups are made and whether runs may go on without one (`opt_in` names the operator's switch)."""

    root: Path = cgroups.DEFAULT_ROOT
    allow_without: bool = False
    opt_in: str = ""

    def run_cgroup(self, max_processes: int, memory_bytes: int) -> cgroups.RunCgroup | None:
        """The run's cgroup; None only when the operator allowed runs without one. Raises IsolationUnavailable."""
        try:
            return cgroups.create(max_processes, memory_bytes, self.root)
        except cgroups.CgroupUnavailable as exc:
            if self.allow_without:
                return None
            raise IsolationUnavailable(self.refusal(str(exc))) from None

    def refusal(self, problem: str) -> str:
        return (f"isolation unavailable: no per-run cgroup with memory and pids caps can be made ({problem}); "
                f"runs are refused (set {self.opt_in}=1 to run with rlimits only)")

    def startup_line(self, what: str) -> str:
        """One line for the startup log saying which isolation `what` gets here."""
        problem, found = cgroups.describe(self.root)
        if problem is None:
            return f"{what}: bubblewrap sandbox with a per-run cgroup ({found}) capping memory and processes"
        if self.allow_without:
            return (f"{what}: WARNING {self.opt_in}=1: runs go on WITHOUT a cgroup ({problem}); memory and processes are "
                    "capped by rlimits only, which do not bound a whole process tree nor tmpfs pages")
        return f"{what}: {self.refusal(problem)}"


class ProbeCache:
    """Remembers a probe's answer (None = fine, else the problem) per key; a problem is probed again after a while."""

    def __init__(self, retry_seconds: float = PROBE_RETRY_SECONDS):
        self.retry_seconds = retry_seconds
        self._answers: dict[object, tuple[str | None, float]] = {}
        self._lock = threading.Lock()

    def problem(self, key, probe: Callable[[], str | None]) -> str | None:
        with self._lock:
            problem, checked = self._answers.get(key, (None, -1.0))
            if checked < 0 or (problem and time.monotonic() - checked > self.retry_seconds):
                problem = probe()
                self._answers[key] = (problem, time.monotonic())
        return problem


_filter_probes = ProbeCache()
