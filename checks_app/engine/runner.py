"""Runs one IDS check in a child forked from the check worker's warm zygote (checks_app/engine/zygote.py), confined
like a conversion's ifcopenshell stage: the zygote runs in bubblewrap without network, nothing writable, only
`checks_app` and the Python environment importable (never the configuration or the data directory); every file a
check touches is a descriptor opened here in the check's work folder; each child is moved into a per-check cgroup
with a memory and process cap before it reads a byte (refused without one unless the operator opted in:
conversionAllowNoCgroup, then RLIMIT_AS caps it), has an RLIMIT_CPU of the time limit and is killed with its cgroup
at the time limit. Progress arrives as JSON lines on the child's own pipe; its last line says the result is written,
and the caller has it while the child exits (its memory's teardown) and its cgroup is removed, before the next check. The zygote starts on the worker's first
check (check_worker warms it before) and again if it died; starting it is not the check's time."""

from __future__ import annotations

import json
import os
import queue
import signal
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from checks_app.engine.child import MEMORY_EXIT_CODE, UNRUNNABLE_IDS_EXIT_CODE
from checks_app.engine.zygote import RESULT_WRITTEN
from models_app.public import ConversionLimits
from sandboxing.limits import open_new, open_read
from sandboxing.probe import IsolationUnavailable, isolation_problem
from sandboxing.stage import ERROR_TAIL_BYTES, Descriptors, StageOutput
from sandboxing.zygote import SandboxedZygote, ZygotePool
from sandboxing.zygote_server import GO

RESULT_FILE = "result.json"
JOB_FILE = "job.json"
STOP_SECONDS = 10


@dataclass
class CheckOutcome:
    ok: bool
    error: str = ""
    # The same input under the same limits would fail the same way: the time limit, the memory cap, an IDS pattern
    # the engine cannot run (not: a refused sandbox, an unreadable IFC, a crash).
    repeatable: bool = False


class ZygoteGone(Exception):
    """The check zygote ended or could not start (the message says why, with its error output)."""


class _ChildTimeout(Exception):
    pass


class CheckZygote(SandboxedZygote):
    """The sandboxed fork server of one check worker process; started on first use, again if it died."""

    module = "checks_app.engine.zygote"
    package = "checks_app"
    failures = (ZygoteGone, _ChildTimeout)

    def start_failed(self, exc: OSError) -> Exception:
        return ZygoteGone(f"the check sandbox could not start: {exc.strerror or exc}")

    def not_started(self, exc: Exception) -> Exception:
        return ZygoteGone(f"the check sandbox did not start: {exc}")

    def timed_out(self) -> Exception:
        return _ChildTimeout()

    def ended(self, error: OSError | None, tail: str) -> Exception:
        return ZygoteGone(f"the check sandbox ended: {tail}")

    def child_not_found(self) -> Exception:
        return ZygoteGone("the check's process could not be found outside its sandbox")


_zygotes = ZygotePool(CheckZygote)


def check_zygote(limits: ConversionLimits) -> CheckZygote:
    """The check zygote of this worker process for these limits (started by the first check, or by warm_up)."""
    return _zygotes.get(limits)


def warm_up(limits: ConversionLimits) -> None:
    """Starts the check zygote now (the check worker at startup), so the first check does not wait for it."""
    if isolation_problem(limits.bwrap) is None:
        zygote = check_zygote(limits)
        with zygote.lock:
            if not zygote.alive:
                zygote.start()


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
    zygote = check_zygote(limits)
    zygote.lock.acquire()
    exiting = None
    try:
        if not zygote.alive:
            zygote.start()
        code, output, exiting = _run_in_child(zygote, ifc_path, work_dir, time.monotonic() + timeout_seconds, int(timeout_seconds) + 5,
                                              cgroup, limits, on_progress)
        return _outcome(code, output, cgroup, limits, work_dir)
    except _ChildTimeout:
        return CheckOutcome(False, f"the check exceeded the time limit of {timeout_seconds:g} s and was stopped", repeatable=True)
    except ZygoteGone as exc:
        return CheckOutcome(False, str(exc)[-ERROR_TAIL_BYTES:])
    except IsolationUnavailable:
        return CheckOutcome(False, "check refused: isolation unavailable: the check could not join its cgroup")
    except OSError as exc:
        return CheckOutcome(False, f"the check could not start: {exc.strerror or exc}")
    finally:
        if exiting is None:
            _release(zygote, cgroup)
        else:  # the zygote stays this check's until its child has exited and the cgroup is gone
            threading.Thread(target=_settle_exit, args=(zygote, cgroup, exiting), daemon=True).start()


@dataclass
class _Exiting:
    """A child that has written its result and is still exiting."""

    host_pid: int
    output: StageOutput
    deadline: float


def _release(zygote: CheckZygote, cgroup) -> None:
    try:
        if cgroup is not None:
            cgroup.remove()
    finally:
        zygote.lock.release()


def _settle_exit(zygote: CheckZygote, cgroup, child: _Exiting) -> None:
    """After the caller has the result: waits for the child's exit (killed at the time limit like any check), then
    removes its cgroup and frees the zygote for the next check, which waits for its lock until then."""
    try:
        try:
            zygote.expect("exited", child.deadline)
        except Exception:  # the time limit, a zygote gone, or anything unforeseen: no child may outlive its check
            _kill(child.host_pid, cgroup)
            zygote.stop()
        child.output.drain()
    finally:
        _release(zygote, cgroup)


def _run_in_child(zygote: CheckZygote, ifc_path: Path, work_dir: Path, deadline: float, cpu_seconds: int, cgroup, limits,
                  on_progress) -> tuple[int, StageOutput, _Exiting | None]:
    """Forks the check's child, moves it into the cgroup, lets it go and relays its progress; (exit code, output,
    the child still exiting once its result is written, else None)."""
    with Descriptors() as sent:
        go_read, go_write = sent.pipe()
        progress_read, progress_write = os.pipe()
        stderr_read, stderr_write = os.pipe()
        output = StageOutput(os.fdopen(progress_read, "rb"), os.fdopen(stderr_read, "rb"))
        fds = {"go": go_read, "ifc": sent.add(open_read(ifc_path)), "job": sent.add(open_read(work_dir / JOB_FILE)),
               "out": sent.add(open_new(work_dir / RESULT_FILE)), "progress": sent.add(progress_write), "stderr": sent.add(stderr_write)}
        job = {"cpu_seconds": cpu_seconds, "memory_bytes": 0 if cgroup else limits.memory_bytes}
        try:
            _, host_pid = zygote.fork(job, fds, deadline)
        except (_ChildTimeout, ZygoteGone):
            zygote.stop()
            sent.close_all()  # the pipes' ends held here too, or their readers never see the end
            output.drain()
            raise
        finally:
            sent.close_all(keep=go_write)  # the child has its own copies now
        try:
            if cgroup is not None:
                cgroup.join(host_pid)  # before the child reads a byte of the IFC
        except OSError:
            sent.close_all()  # no go: the child ends without reading anything
            _expect_exit(zygote, time.monotonic() + STOP_SECONDS)
            output.drain()
            raise IsolationUnavailable("cgroup") from None
        os.write(go_write, GO)
    exiting = None
    try:
        if output.relay(deadline, lambda line: _relay(line, on_progress)):
            exiting = _Exiting(host_pid, output, deadline)
            return 0, output, exiting
        return zygote.expect("exited", deadline)["status"], output, None
    except (queue.Empty, _ChildTimeout):
        _kill(host_pid, cgroup)
        _expect_exit(zygote, time.monotonic() + STOP_SECONDS)
        raise _ChildTimeout() from None
    except ZygoteGone:  # the zygote died under the child
        _kill(host_pid, cgroup)
        zygote.stop()
        raise
    finally:
        if exiting is None:
            output.drain()


def _expect_exit(zygote: CheckZygote, deadline: float) -> None:
    """Waits for the zygote to report its child ended; restarts it next time if it does not."""
    try:
        zygote.expect("exited", deadline)
    except (_ChildTimeout, ZygoteGone):
        zygote.stop()


def _kill(host_pid: int, cgroup) -> None:
    try:
        os.kill(host_pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if cgroup is not None:
        cgroup.kill_all()


def _outcome(code: int, output: StageOutput, cgroup, limits: ConversionLimits, work_dir: Path) -> CheckOutcome:
    if code != 0:
        if cgroup is not None and cgroup.oom_killed():
            return CheckOutcome(False, f"the check exceeded its memory cap of {limits.memory_mb} MB (VIEWER_CHECK_MEMORY_MB) and was stopped", repeatable=True)
        return CheckOutcome(False, output.error("the check", code)[-ERROR_TAIL_BYTES:],
                            repeatable=code in (MEMORY_EXIT_CODE, UNRUNNABLE_IDS_EXIT_CODE))
    if (work_dir / RESULT_FILE).stat().st_size == 0:
        return CheckOutcome(False, "the check process wrote no result")
    return CheckOutcome(True)


def _relay(line: str, on_progress: Callable[[str, int], None]) -> bool:
    """Relays a progress line; True for the child's last line, that its result is written."""
    try:
        progress = json.loads(line)
        if progress.get(RESULT_WRITTEN) is True:
            return True
        on_progress(str(progress["phase"]), int(progress["percent"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    return False


def check_limits(config, memory_mb: int) -> ConversionLimits:
    """A check is confined like a conversion (same cgroup root and opt-in), with its own memory cap."""
    return replace(ConversionLimits.from_config(config), memory_mb=memory_mb)
