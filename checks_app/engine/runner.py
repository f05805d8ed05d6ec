"""Runs one IDS check's child process (checks_app.engine.child), confined like a conversion's ifcopenshell stage:
bubblewrap without network, nothing writable, only `checks_app` and the Python environment importable (never the
configuration or the data directory), every file a descriptor opened here in the check's work folder, a per-check
cgroup with a memory and process cap (refused without one unless the operator opted in: conversionAllowNoCgroup),
killed whole at the time limit. Progress arrives as JSON lines on the child's stdout."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from checks_app.engine.child import MEMORY_EXIT_CODE, UNRUNNABLE_IDS_EXIT_CODE
from models_app.public import ConversionLimits
from sandboxing import bwrap, seccomp
from sandboxing.limits import open_new, open_read, python_command
from sandboxing.probe import IsolationUnavailable, isolation_problem
from sandboxing.stage import ERROR_TAIL_BYTES, ConfinedProcess, Descriptors, StageTimeout

RESULT_FILE = "result.json"
JOB_FILE = "job.json"


@dataclass
class CheckOutcome:
    ok: bool
    error: str = ""
    # The same input under the same limits would fail the same way: the time limit, the memory cap, an IDS pattern
    # the engine cannot run (not: a refused sandbox, an unreadable IFC, a crash).
    repeatable: bool = False


def run_check_process(
    *,
    ifc_path: Path,
    job: dict,
    work_dir: Path,
    timeout_seconds: float,
    limits: ConversionLimits,
    on_progress: Callable[[str, int], None],
) -> CheckOutcome:
    """Runs one check of ifc_path; job = {"ids": [{"name", "content"}], "overrides": {...} | null}. When the outcome
    is ok the result JSON is at work_dir / RESULT_FILE."""
    if problem := isolation_problem(limits.bwrap):
        return CheckOutcome(False, f"check refused: isolation unavailable: {problem}")
    (work_dir / JOB_FILE).write_text(json.dumps(job), encoding="utf-8")
    try:
        cgroup = limits.run_cgroup()
    except IsolationUnavailable as exc:
        return CheckOutcome(False, f"check refused: {exc}")
    try:
        with Descriptors() as passed:
            ifc, job_fd, out = (passed.add(open_read(ifc_path)), passed.add(open_read(work_dir / JOB_FILE)),
                                passed.add(open_new(work_dir / RESULT_FILE)))
            command = python_command(limits, [
                "-m", "checks_app.engine.child", "--ifc", f"/proc/self/fd/{ifc}", "--job", f"/proc/self/fd/{job_fd}",
                "--out", f"/proc/self/fd/{out}", "--memory-mb", "0" if cgroup else str(limits.memory_mb),
            ], packages=("checks_app",))
            argv, chain_env = bwrap.limited(command, rlimits={**limits.rlimits(), "cpu": int(timeout_seconds) + 5}, cgroup=cgroup,
                                            seccomp_fd=passed.add(seccomp.program_fd()))
            stage = ConfinedProcess(argv, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **chain_env}, pass_fds=tuple(passed.fds))
        code = stage.finish(time.monotonic() + timeout_seconds, lambda line: _relay(line, on_progress), cgroup)
        return _outcome(code, stage, cgroup, limits, work_dir)
    except StageTimeout:
        return CheckOutcome(False, f"the check exceeded the time limit of {timeout_seconds:g} s and was stopped", repeatable=True)
    except OSError as exc:
        return CheckOutcome(False, f"the check could not start: {exc.strerror or exc}")
    finally:
        if cgroup is not None:
            cgroup.remove()


def _outcome(code: int, stage: ConfinedProcess, cgroup, limits: ConversionLimits, work_dir: Path) -> CheckOutcome:
    if code == bwrap.CGROUP_JOIN_FAILED:
        return CheckOutcome(False, "check refused: isolation unavailable: the check could not join its cgroup")
    if code != 0:
        if cgroup is not None and cgroup.oom_killed():
            return CheckOutcome(False, f"the check exceeded its memory cap of {limits.memory_mb} MB (VIEWER_CHECK_MEMORY_MB) and was stopped", repeatable=True)
        return CheckOutcome(False, stage.output.error("the check", code)[-ERROR_TAIL_BYTES:],
                            repeatable=code in (MEMORY_EXIT_CODE, UNRUNNABLE_IDS_EXIT_CODE))
    if (work_dir / RESULT_FILE).stat().st_size == 0:
        return CheckOutcome(False, "the check process wrote no result")
    return CheckOutcome(True)


def _relay(line: str, on_progress: Callable[[str, int], None]) -> None:
    try:
        progress = json.loads(line)
        on_progress(str(progress["phase"]), int(progress["percent"]))
    except (ValueError, KeyError, TypeError):
        pass


def check_limits(config, memory_mb: int) -> ConversionLimits:
    """A check is confined like a conversion (same cgroup root and opt-in), with its own memory cap."""
    return replace(ConversionLimits.from_config(config), memory_mb=memory_mb)
