"""Runs one IDS check in a child forked from the check worker's warm zygote (checks_app/engine/zygote.py), confined
like a conversion's ifcopenshell stage: the zygote runs in bubblewrap without network, nothing writable, only
`checks_app` and the Python environment importable (never the configuration or the data directory); every file a
check touches is a descriptor opened here in the check's work folder; each child is moved into a per-check cgroup
with a memory and process cap before it reads a byte (refused without one unless the operator opted in:
conversionAllowNoCgroup, then RLIMIT_AS caps it), has an RLIMIT_CPU of the time limit and is killed with its cgroup
at the time limit. Progress arrives as JSON lines on the child's own pipe. The zygote starts on the worker's first
check (check_worker warms it before) and again if it died; starting it is not the check's time."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import psutil

from checks_app.engine.child import MEMORY_EXIT_CODE, UNRUNNABLE_IDS_EXIT_CODE
from checks_app.engine.zygote import GO
from models_app.public import ConversionLimits
from sandboxing import bwrap, seccomp
from sandboxing.limits import open_new, open_read, python_command
from sandboxing.probe import IsolationUnavailable, isolation_problem
from sandboxing.stage import ERROR_TAIL_BYTES, Descriptors, StageOutput, keep_tail

RESULT_FILE = "result.json"
JOB_FILE = "job.json"
ZYGOTE_START_SECONDS = 120
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


def _namespace_pid(pid: int) -> int | None:
    """A process's pid in its innermost pid namespace (the last NSpid entry)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return next((int(line.split()[-1]) for line in status if line.startswith("NSpid:")), None)
    except (OSError, ValueError):
        return None


class CheckZygote:
    """The sandboxed fork server of one check worker process; started on first use, again if it died."""

    def __init__(self, limits: ConversionLimits):
        self.limits = limits
        self.process: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.stderr_tail = bytearray()
        self.lock = threading.Lock()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = python_command(self.limits, ["-m", "checks_app.engine.zygote", "--control-fd", str(theirs.fileno())], packages=("checks_app",))
        seccomp_fd = seccomp.program_fd()
        argv, chain_env = bwrap.limited(command, rlimits=self.limits.rlimits(), cgroup=None, seccomp_fd=seccomp_fd)
        self.stderr_tail = bytearray()
        try:
            self.process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                pass_fds=(theirs.fileno(), seccomp_fd), env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **chain_env},
            )
        except OSError as exc:
            ours.close()
            raise ZygoteGone(f"the check sandbox could not start: {exc.strerror or exc}") from None
        finally:
            theirs.close()
            os.close(seccomp_fd)
        self.control = ours
        threading.Thread(target=keep_tail, args=(self.process.stderr, self.stderr_tail), daemon=True).start()
        try:
            self.expect("ready", time.monotonic() + ZYGOTE_START_SECONDS)
        except (ZygoteGone, _ChildTimeout) as exc:
            self.stop()
            raise ZygoteGone(f"the check sandbox did not start: {exc}") from None

    def expect(self, key: str, deadline: float):
        """The value of the next message carrying `key` (a late answer about an earlier child is skipped)."""
        while True:
            self.control.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                message = self.control.recv(4096)
            except TimeoutError:
                raise _ChildTimeout() from None
            except OSError:
                message = b""
            if not message:
                self.process.wait(timeout=10)
                tail = self.stderr_tail.decode("utf-8", "replace").strip()
                raise ZygoteGone(f"the check sandbox ended: {tail[-ERROR_TAIL_BYTES:] or 'no error output'}")
            answer = json.loads(message)
            if key in answer:
                return answer if key == "exited" else answer[key]

    def fork(self, job: dict, fds: dict[str, int], deadline: float) -> int:
        """Sends a check; returns its child's host pid."""
        socket.send_fds(self.control, [json.dumps({**job, "fds": list(fds)}).encode()], list(fds.values()))
        ns_pid = self.expect("forked", deadline)
        host_pid = next((p.pid for p in psutil.Process(self.process.pid).children(recursive=True) if _namespace_pid(p.pid) == ns_pid), None)
        if host_pid is None:
            raise ZygoteGone("the check's process could not be found outside its sandbox")
        return host_pid

    def stop(self) -> None:
        if self.control is not None:
            self.control.close()
            self.control = None
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
            self.process = None


_zygotes: dict[ConversionLimits, CheckZygote] = {}
_zygotes_lock = threading.Lock()


def check_zygote(limits: ConversionLimits) -> CheckZygote:
    """The check zygote of this worker process for these limits (started by the first check, or by warm_up)."""
    with _zygotes_lock:
        return _zygotes.setdefault(limits, CheckZygote(limits))


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
    try:
        with zygote.lock:
            if not zygote.alive:
                zygote.start()
            code, output = _run_in_child(zygote, ifc_path, work_dir, time.monotonic() + timeout_seconds, int(timeout_seconds) + 5,
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
        if cgroup is not None:
            cgroup.remove()


def _run_in_child(zygote: CheckZygote, ifc_path: Path, work_dir: Path, deadline: float, cpu_seconds: int, cgroup, limits,
                  on_progress) -> tuple[int, StageOutput]:
    """Forks the check's child, moves it into the cgroup, lets it go and relays its progress; (exit code, output)."""
    with Descriptors() as sent:
        go_read, go_write = sent.pipe()
        progress_read, progress_write = os.pipe()
        stderr_read, stderr_write = os.pipe()
        output = StageOutput(os.fdopen(progress_read, "rb"), os.fdopen(stderr_read, "rb"))
        fds = {"go": go_read, "ifc": sent.add(open_read(ifc_path)), "job": sent.add(open_read(work_dir / JOB_FILE)),
               "out": sent.add(open_new(work_dir / RESULT_FILE)), "progress": sent.add(progress_write), "stderr": sent.add(stderr_write)}
        job = {"cpu_seconds": cpu_seconds, "memory_bytes": 0 if cgroup else limits.memory_bytes}
        try:
            host_pid = zygote.fork(job, fds, deadline)
        except (_ChildTimeout, ZygoteGone):
            zygote.stop()
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
    try:
        output.relay(deadline, lambda line: _relay(line, on_progress))
        return zygote.expect("exited", deadline)["status"], output
    except (queue.Empty, _ChildTimeout):
        _kill(host_pid, cgroup)
        _expect_exit(zygote, time.monotonic() + STOP_SECONDS)
        raise _ChildTimeout() from None
    except ZygoteGone:  # the zygote died under the child
        _kill(host_pid, cgroup)
        zygote.stop()
        raise
    finally:
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


def _relay(line: str, on_progress: Callable[[str, int], None]) -> None:
    try:
        progress = json.loads(line)
        on_progress(str(progress["phase"]), int(progress["percent"]))
    except (ValueError, KeyError, TypeError):
        pass


def check_limits(config, memory_mb: int) -> ConversionLimits:
    """A check is confined like a conversion (same cgroup root and opt-in), with its own memory cap."""
    return replace(ConversionLimits.from_config(config), memory_mb=memory_mb)
