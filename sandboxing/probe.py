"""What both sandboxes check before running anything: the tools exist, a per-run cgroup with memory and pids caps can
be made (fail closed: without one, runs are refused unless the operator opted in explicitly), and the exact sandbox
starts (a probe run, remembered; a failed probe is retried after a while)."""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sandboxing import cgroups

PROBE_RETRY_SECONDS = 30


class IsolationUnavailable(Exception):
    """Runs are refused: the sandbox cannot give the isolation it promises. The message says why and what to do."""


def missing_tool(bwrap: str) -> str | None:
    for binary, package in ((bwrap, "bubblewrap"), ("prlimit", "util-linux")):
        if shutil.which(binary) is None:
            return f"{binary!r} not found; install the {package} package"
    return None


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
