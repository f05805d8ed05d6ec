"""Runs one IDS check in a child forked from the check worker's warm zygote (checks_app/engine/zygote.py), confined
like a conversion's ifcopenshell stage: the zygote runs in bubblewrap without network, nothing writable, only
`checks_app` and the Python environment importable (never the configuration or the data directory); every file a
check touches is a descriptor opened here in the check's work folder; each child is moved into a per-check cgroup
with a memory and process cap before it reads a byte (refused without one unless the operator opted in:
conversionAllowNoCgroup, then RLIMIT_AS caps it), has an RLIMIT_CPU of the time limit and is killed with its cgroup
at the time limit. Progress arrives as JSON lines on the child's own pipe; its last line says the result is written,
and the caller has it while the child exits (its memory's teardown) and its cgroup is removed, before the next check.
The zygote starts on the worker's first check (check_worker warms it before) and again if it died; starting it is
not the check's time.

A spare child: while the worker is idle, the next check's child is already forked and joined into a fresh run cgroup
(its caps written), waiting on its `go` socket; a check then hands it the job (its limits, with the descriptors of
the IFC, the job file and the result file attached) instead of paying the cgroup's creation (~1 ms), the fork (3-4
ms) and the join (~13 ms: an RCU grace period) itself. Once joined, the spare copies the memory it shares with the
zygote (~60 MB, charged to its cgroup when it has one; only when that is at most 1/8 of its memory cap, which its
check then has that much less of), so its check pays no copy-on-write faults: 12-16 ms of a 60 ms check of a small
model. A child forked for a waiting check copies nothing ahead. A spare is made by warm_up and after each check (once the
last child has exited and its cgroup is gone), used by one check only, and not used when it died or its zygote was
replaced (a fresh one is made for the check then, as before); a worker that stops kills it and removes its cgroup
(at exit; after a SIGKILL, the next start's sweep of stale run cgroups removes it)."""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import queue
import select
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from checks_app.engine.child import MEMORY_EXIT_CODE, UNRUNNABLE_IDS_EXIT_CODE
from checks_app.engine.zygote import JOINED, RESULT_WRITTEN
from models_app.public import ConversionLimits
from sandboxing.cgroups import RunCgroup
from sandboxing.limits import open_new, open_read
from sandboxing.probe import IsolationUnavailable, isolation_problem
from sandboxing.stage import ERROR_TAIL_BYTES, Descriptors, StageOutput
from sandboxing.zygote import SandboxedZygote, ZygotePool

logger = logging.getLogger(__name__)

RESULT_FILE = "result.json"
JOB_FILE = "job.json"
STOP_SECONDS = 10
SPARE_FORK_SECONDS = 30  # a spare made while idle: the fork's answer (a check's own waits until its deadline)
COPY_SHARE_OF_CAP = 8  # a spare copies what it shares with its zygote ahead only when that is at most 1/8 of its cap


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


class _JoinFailed(Exception):
    """The child could not be moved into its run cgroup."""


class _SpareGone(Exception):
    """The spare child ended before it took its job."""


@dataclass
class _Spare:
    """A child forked ahead, in its run cgroup, waiting on `go` for its job; the worker's ends of its pipes."""

    zygote_process: subprocess.Popen  # the zygote it was forked from: a replaced zygote's spare is dead
    host_pid: int
    cgroup: RunCgroup | None
    go: socket.socket
    progress: int | None  # read ends, until a check's StageOutput takes them
    stderr: int | None

    def output(self) -> StageOutput:
        output = StageOutput(os.fdopen(self.progress, "rb"), os.fdopen(self.stderr, "rb"))
        self.progress = self.stderr = None
        return output

    def close(self) -> None:
        """Closes the worker's ends (a child still waiting on `go` then ends without reading anything)."""
        self.go.close()
        for fd in (self.progress, self.stderr):
            if fd is not None:
                os.close(fd)
        self.progress = self.stderr = None


class CheckZygote(SandboxedZygote):
    """The sandboxed fork server of one check worker process; started on first use, again if it died. It holds at
    most one spare child (under `lock`), which dies with it."""

    module = "checks_app.engine.zygote"
    package = "checks_app"
    failures = (ZygoteGone, _ChildTimeout)

    def __init__(self, limits):
        super().__init__(limits)
        self.spare: _Spare | None = None

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

    def stop(self) -> None:
        spare, self.spare = self.spare, None
        super().stop()  # the spare child dies with the zygote (its parent-death signal)
        if spare is not None:
            spare.close()
            if spare.cgroup is not None:
                spare.cgroup.remove()


_zygotes = ZygotePool(CheckZygote)
_closing = threading.Event()  # the worker process is exiting: no spare is made any more


def check_zygote(limits: ConversionLimits) -> CheckZygote:
    """The check zygote of this worker process for these limits (started by the first check, or by warm_up)."""
    return _zygotes.get(limits)


def warm_up(limits: ConversionLimits) -> None:
    """Starts the check zygote now (the check worker at startup), so the first check does not wait for it, and
    makes its spare child."""
    if isolation_problem(limits.bwrap) is None:
        zygote = check_zygote(limits)
        with zygote.lock:
            if not zygote.alive:
                zygote.start()
            _refill(zygote)


def discard_spare(limits: ConversionLimits) -> None:
    """Ends the zygote's spare child (if any) and removes its cgroup; the next check forks its own."""
    zygote = check_zygote(limits)
    with zygote.lock:
        _discard(zygote)


@atexit.register
def _discard_all_spares() -> None:
    """A worker that stops ends its spare children and removes their cgroups (waiting for a check's settling)."""
    _closing.set()
    with _zygotes.lock:
        zygotes = list(_zygotes.zygotes.values())
    for zygote in zygotes:
        if zygote.lock.acquire(timeout=STOP_SECONDS + 5):
            try:
                _discard(zygote)
            finally:
                zygote.lock.release()


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
    zygote = check_zygote(limits)
    zygote.lock.acquire()
    spare = exiting = None
    try:
        for attempt in range(2):
            spare = _take_spare(zygote)
            if spare is None and not zygote.alive:
                zygote.start()
            deadline = time.monotonic() + timeout_seconds  # from here, as a child forked now: its fork and join count
            if spare is None:
                spare = _fresh_spare(zygote, deadline)
            try:
                code, output, exiting = _run_in_child(zygote, spare, ifc_path, work_dir, deadline, int(timeout_seconds) + 5, limits, on_progress)
                break
            except _SpareGone:  # it died between the look and the job: this check makes its own
                _release_cgroup(spare)
                spare = None
                if attempt:
                    raise ZygoteGone("the check's process ended before it took its job") from None
        return _outcome(code, output, spare.cgroup, limits, work_dir)
    except IsolationUnavailable as exc:
        return CheckOutcome(False, f"check refused: {exc}")
    except _ChildTimeout:
        return CheckOutcome(False, f"the check exceeded the time limit of {timeout_seconds:g} s and was stopped", repeatable=True)
    except ZygoteGone as exc:
        return CheckOutcome(False, str(exc)[-ERROR_TAIL_BYTES:])
    except _JoinFailed:
        return CheckOutcome(False, "check refused: isolation unavailable: the check could not join its cgroup")
    except OSError as exc:
        return CheckOutcome(False, f"the check could not start: {exc.strerror or exc}")
    finally:
        if exiting is None:
            _release(zygote, spare)
        else:  # the zygote stays this check's until its child has exited and the cgroup is gone
            threading.Thread(target=_settle_exit, args=(zygote, spare, exiting), daemon=True).start()


@dataclass
class _Exiting:
    """A child that has written its result and is still exiting."""

    host_pid: int
    output: StageOutput
    deadline: float


def _release_cgroup(spare: _Spare | None) -> None:
    if spare is not None and spare.cgroup is not None:
        spare.cgroup.remove()


def _release(zygote: CheckZygote, spare: _Spare | None) -> None:
    """After a check whose child has exited (or never started): its cgroup removed, the zygote free, and a spare
    for the next check made in the background."""
    try:
        _release_cgroup(spare)
    finally:
        zygote.lock.release()
    threading.Thread(target=_refill_later, args=(zygote,), daemon=True).start()


def _refill_later(zygote: CheckZygote) -> None:
    with zygote.lock:
        _refill(zygote)


def _settle_exit(zygote: CheckZygote, spare: _Spare, child: _Exiting) -> None:
    """After the caller has the result: waits for the child's exit (killed at the time limit like any check), then
    removes its cgroup, makes the next check's spare and frees the zygote for the next check, which waits for its
    lock until then."""
    try:
        try:
            zygote.expect("exited", child.deadline)
        except Exception:  # the time limit, a zygote gone, or anything unforeseen: no child may outlive its check
            _kill(child.host_pid, spare.cgroup)
            zygote.stop()
        child.output.drain()
        _release_cgroup(spare)
        _refill(zygote)
    finally:
        zygote.lock.release()


def _refill(zygote: CheckZygote) -> None:
    """Makes the zygote's spare child when it has none (under the zygote's lock; a running zygote only: starting
    one is for warm_up and the checks). A spare that cannot be made is not an error here: the next check forks its
    own and says what fails."""
    if zygote.spare is not None or not zygote.alive or _closing.is_set():
        return
    try:
        zygote.spare = _fork_spare(zygote, time.monotonic() + SPARE_FORK_SECONDS)
    except (IsolationUnavailable, _JoinFailed, ZygoteGone, _ChildTimeout, OSError) as exc:
        logger.info("no spare check process made ahead (%s): the next check makes its own", type(exc).__name__)


def _discard(zygote: CheckZygote) -> None:
    """Ends the zygote's spare child, if any (under the zygote's lock), and removes its cgroup."""
    spare, zygote.spare = zygote.spare, None
    if spare is None:
        return
    spare.close()  # a spare still waiting ends without reading anything
    if spare.cgroup is not None:
        spare.cgroup.kill_all()
    if spare.zygote_process is zygote.process and zygote.alive:
        _expect_exit(zygote, time.monotonic() + STOP_SECONDS)
    _release_cgroup(spare)


def _take_spare(zygote: CheckZygote) -> _Spare | None:
    """The zygote's spare child if it can take a check: from the running zygote, still waiting (the zygote says
    when a child ended: any message pending from it means the spare is gone, or the zygote). Else None, with the
    spare discarded."""
    spare = zygote.spare
    if spare is None:
        return None
    if zygote.alive and spare.zygote_process is zygote.process and not _pending(zygote.control):
        zygote.spare = None
        return spare
    _discard(zygote)
    return None


def _pending(control: socket.socket | None) -> bool:
    return control is None or bool(select.select([control], [], [], 0)[0])


def _fresh_spare(zygote: CheckZygote, deadline: float) -> _Spare:
    """A child made for this check now, by its running zygote (no usable spare): it copies nothing ahead, its job
    follows at once. Apart from _fork_spare, which the idle refill calls too, so that a check's own forks can be told
    (and counted by the tests) from the spares."""
    return _fork_spare(zygote, deadline, copy_ahead=False)


def _fork_spare(zygote: CheckZygote, deadline: float, copy_ahead: bool = True) -> _Spare:
    """Makes a run cgroup (the zygote's limits), forks a child from the running zygote and moves it into the cgroup;
    the child waits on its go socket. IsolationUnavailable (no cgroup), _JoinFailed, or the zygote's errors (the
    zygote stopped then)."""
    cgroup = zygote.limits.run_cgroup()
    go, child_go = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    progress_read, progress_write = os.pipe()
    stderr_read, stderr_write = os.pipe()
    spare = _Spare(zygote.process, 0, cgroup, go, progress_read, stderr_read)
    try:
        with Descriptors() as sent:  # the child's ends, closed here once it has its own copies (or on a failure)
            fds = {"go": sent.add(child_go.detach()), "progress": sent.add(progress_write), "stderr": sent.add(stderr_write)}
            try:
                _, spare.host_pid = zygote.fork({}, fds, deadline)
            except (_ChildTimeout, ZygoteGone):
                zygote.stop()
                raise
        try:
            if cgroup is not None:
                cgroup.join(spare.host_pid)  # before the child reads a byte of the IFC
        except OSError:
            spare.close()  # no job: the child ends without reading anything
            _expect_exit(zygote, time.monotonic() + STOP_SECONDS)
            raise _JoinFailed() from None
        if copy_ahead:
            with contextlib.suppress(OSError):  # a child already gone: its check finds out when it hands the job
                go.send(json.dumps({JOINED: zygote.limits.memory_bytes // COPY_SHARE_OF_CAP}).encode())
        return spare
    except BaseException:
        spare.close()
        if cgroup is not None:
            cgroup.remove()
        raise


def _run_in_child(zygote: CheckZygote, spare: _Spare, ifc_path: Path, work_dir: Path, deadline: float, cpu_seconds: int,
                  limits, on_progress) -> tuple[int, StageOutput, _Exiting | None]:
    """Hands the check's job to its child (waiting in its cgroup) and relays its progress; (exit code, output, the
    child still exiting once its result is written, else None). _SpareGone when the child ended before its job."""
    job = {"cpu_seconds": cpu_seconds, "memory_bytes": 0 if spare.cgroup else limits.memory_bytes}
    try:
        with Descriptors() as sent:
            fds = [sent.add(open_read(ifc_path)), sent.add(open_read(work_dir / JOB_FILE)), sent.add(open_new(work_dir / RESULT_FILE))]
            try:
                socket.send_fds(spare.go, [json.dumps(job).encode()], fds)
            except (BrokenPipeError, ConnectionResetError):
                (work_dir / RESULT_FILE).unlink(missing_ok=True)
                raise _SpareGone() from None
    except BaseException:
        spare.close()
        if spare.cgroup is not None:
            spare.cgroup.kill_all()
        _expect_exit(zygote, time.monotonic() + STOP_SECONDS)
        raise
    output = spare.output()
    spare.close()  # the child has its job; the socket's end is of no more use
    exiting = None
    try:
        if output.relay(deadline, lambda line: _relay(line, on_progress)):
            exiting = _Exiting(spare.host_pid, output, deadline)
            return 0, output, exiting
        return zygote.expect("exited", deadline)["status"], output, None
    except (queue.Empty, _ChildTimeout):
        _kill(spare.host_pid, spare.cgroup)
        _expect_exit(zygote, time.monotonic() + STOP_SECONDS)
        raise _ChildTimeout() from None
    except ZygoteGone:  # the zygote died under the child
        _kill(spare.host_pid, spare.cgroup)
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
