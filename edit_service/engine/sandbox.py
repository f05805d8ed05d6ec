"""Runs build scripts and IFC inspection inside bubblewrap (command lines, cgroups and checks from `sandboxing`).

Isolation: see sandboxing/bwrap.py; in addition no writable host mount at all: inputs are bound read-only, the
working directory and /tmp are size-capped tmpfs, /dev/shm a small capped tmpfs, and results come back over a pipe
(see sandbox/outputs.py), written on the host into files the host creates, with their total size capped. Limits: a
cgroup per run (process count, memory of the whole tree); where none can be made, runs are refused (503, "isolation
unavailable") unless EDIT_SANDBOX_ALLOW_NO_CGROUP=1, which runs them with RLIMIT_NPROC/RLIMIT_AS instead; rlimits
CPU, FSIZE, NOFILE; a wall-time limit, then the whole tree is killed; at most N runs at once per process. The exact
sandbox is probed; when it cannot start, runs are refused (SandboxUnavailable), never run unsandboxed. A run can be
cancelled from any process on the same data directory (its pid is recorded in the run folder).

Waiting for a slot: a bounded queue, served round robin between requesters (the model today; (user, model) once
there are accounts), so one requester's many queued runs cannot keep another's run waiting for all of them; a run
that finds the queue full (overall, or for its requester) is refused at once with SandboxBusy (503 + Retry-After).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import OrderedDict, deque
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

import psutil

from edit_service.engine.errors import RunFailed, SandboxBusy, SandboxUnavailable
from edit_service.engine.kinds import IFC, ModelKind
from sandboxing import bwrap, seccomp
from sandboxing.cgroups import DEFAULT_ROOT, RunCgroup
from sandboxing.limits import StageLimits, environ_flag, environ_number
from sandboxing.probe import IsolationUnavailable, ProbeCache, isolation_problem

SANDBOX_CODE_DIR = Path(__file__).resolve().parent.parent / "sandbox"
RUN_MOUNT = "/sandbox/run"
INPUT_MOUNT = "/sandbox/in"
CODE_MOUNT = "/sandbox/lib"
STDERR_TAIL_BYTES = 2048
PROBE_CPU_SECONDS = 20
PROBE_WALL_SECONDS = 60
OUTPUT_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
MEGABYTE = bwrap.MEGABYTE
ALLOW_NO_CGROUP = "EDIT_SANDBOX_ALLOW_NO_CGROUP"


@dataclass(frozen=True)
class SandboxLimits(StageLimits):
    """Of one build script run or inspection (memory, processes, open files, file size: StageLimits' defaults)."""

    wall_seconds: float = 60
    cpu_seconds: int = 60
    tmp_mb: int = 256
    output_mb: int = 1024  # the working directory's size, and the most a run may send back
    concurrent_runs: int = 4
    queued_runs: int = 16  # runs waiting for a slot, all requesters together
    queued_runs_per_requester: int = 4
    shm_mb: int = 64  # /dev/shm, well below memory_mb

    allow_no_cgroup_setting: ClassVar[str] = ALLOW_NO_CGROUP

    @classmethod
    def from_environment(cls, environ=os.environ) -> "SandboxLimits":
        def number(name, default, kind=int):
            return environ_number(environ, name, default, kind)

        return cls(
            bwrap=environ.get("EDIT_SANDBOX_BWRAP") or "bwrap",
            wall_seconds=number("EDIT_SANDBOX_WALL_SECONDS", 60.0, float),
            cpu_seconds=number("EDIT_SANDBOX_CPU_SECONDS", 60),
            memory_mb=number("EDIT_SANDBOX_MEMORY_MB", 2048),
            file_size_mb=number("EDIT_SANDBOX_FILE_SIZE_MB", 1024),
            open_files=number("EDIT_SANDBOX_OPEN_FILES", 256),
            processes=number("EDIT_SANDBOX_PROCESSES", 64),
            tmp_mb=number("EDIT_SANDBOX_TMP_MB", 256),
            output_mb=number("EDIT_SANDBOX_OUTPUT_MB", 1024),
            concurrent_runs=number("EDIT_SANDBOX_CONCURRENT_RUNS", 4),
            queued_runs=number("EDIT_SANDBOX_QUEUED_RUNS", 16),
            queued_runs_per_requester=number("EDIT_SANDBOX_QUEUED_RUNS_PER_REQUESTER", 4),
            shm_mb=number("EDIT_SANDBOX_SHM_MB", 64),
            cgroup_root=environ.get("EDIT_SANDBOX_CGROUP_ROOT") or str(DEFAULT_ROOT),
            allow_no_cgroup=environ_flag(environ, ALLOW_NO_CGROUP),
        )


@dataclass
class Outcome:
    returncode: int
    stderr_tail: str
    timed_out: bool
    seconds: float
    cancelled: bool = False
    outputs: dict[str, Path] = field(default_factory=dict)
    output_error: str = ""


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - STDERR_TAIL_BYTES))
            return handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def _process_start(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return None


class RunRecord:
    """`<run folder>.pid`: who is running in a run folder, so that any edit-service process can cancel it."""

    def __init__(self, run_dir: Path):
        self.pid_file = run_dir.parent / f"{run_dir.name}.pid"
        self.cancel_marker = run_dir.parent / f"{run_dir.name}.cancelled"

    def write(self, pid: int) -> None:
        self.pid_file.write_text(json.dumps({"pid": pid, "started": _process_start(pid)}))

    def remove(self) -> None:
        self.pid_file.unlink(missing_ok=True)
        self.cancel_marker.unlink(missing_ok=True)

    @property
    def cancelled(self) -> bool:
        return self.cancel_marker.exists()


def cancel_runs(runs_dir: Path) -> int:
    """Kills the process tree of every run recorded under runs_dir (this model's runs, from any process)."""
    cancelled = 0
    for pid_file in runs_dir.glob("*.pid"):
        try:
            record = json.loads(pid_file.read_text())
        except (OSError, ValueError):
            continue
        pid = record.get("pid")
        if not isinstance(pid, int) or _process_start(pid) != record.get("started"):
            continue  # finished, or the pid now belongs to another process
        pid_file.with_suffix(".cancelled").touch()
        try:
            os.killpg(pid, signal.SIGKILL)
            cancelled += 1
        except ProcessLookupError:
            pass
    return cancelled


class _Turn:
    __slots__ = ("granted",)

    def __init__(self):
        self.granted = False


class FairSlots:
    """`slots` runs at once; the others wait in a bounded queue. A freed slot goes to the requester that has waited
    longest for a turn (round robin across requesters with waiting runs), each requester's runs in arrival order."""

    RECENT_RUNS = 20

    def __init__(self, slots: int, queued: int, queued_per_requester: int, typical_seconds: float):
        self.free, self.slots = slots, slots
        self.queued, self.queued_per_requester = queued, queued_per_requester
        self._changed = threading.Condition()
        self._waiting: OrderedDict[str, deque[_Turn]] = OrderedDict()
        self._durations: deque[float] = deque([typical_seconds], maxlen=self.RECENT_RUNS)

    @contextmanager
    def slot(self, requester: str):
        self._take(requester)
        started = time.monotonic()
        try:
            yield
        finally:
            self._hand_on(time.monotonic() - started)

    def waiting(self, requester: str | None = None) -> int:
        with self._changed:
            return sum(len(turns) for key, turns in self._waiting.items() if requester in (None, key))

    def _take(self, requester: str) -> None:
        with self._changed:
            if self.free:
                self.free -= 1
                return
            queued = sum(len(turns) for turns in self._waiting.values())
            mine = len(self._waiting.get(requester, ()))
            if queued >= self.queued or mine >= self.queued_per_requester:
                retry_after = max(1, math.ceil(sum(self._durations) / len(self._durations) * (queued + 1) / self.slots))
                whose = f"{queued} runs are waiting (at most {self.queued})" if queued >= self.queued else \
                    f"this model has {mine} runs waiting (at most {self.queued_per_requester})"
                raise SandboxBusy(f"the sandbox is busy: {whose}; retry after {retry_after} s", retry_after)
            turn = _Turn()
            self._waiting.setdefault(requester, deque()).append(turn)
            try:
                while not turn.granted:
                    self._changed.wait()
            except BaseException:  # the waiting thread is interrupted: its turn, or the slot it got, goes on
                if turn.granted:
                    self._hand_on_locked()
                else:
                    self._waiting[requester].remove(turn)
                    if not self._waiting[requester]:
                        del self._waiting[requester]
                raise

    def _hand_on(self, seconds: float) -> None:
        with self._changed:
            self._durations.append(seconds)
            self._hand_on_locked()

    def _hand_on_locked(self) -> None:
        if not self._waiting:
            self.free += 1
            return
        requester, turns = self._waiting.popitem(last=False)
        turns.popleft().granted = True
        if turns:
            self._waiting[requester] = turns  # to the back: the next slot goes to another requester
        self._changed.notify_all()


class Sandbox:
    _probes = ProbeCache()
    _slot_lock = threading.Lock()
    _slots: dict[tuple, FairSlots] = {}

    def __init__(self, limits: SandboxLimits, requester: str = ""):
        self.limits = limits
        self.requester = requester  # whose runs these are, for the fair share of the slots

    def for_requester(self, requester: str) -> Sandbox:
        return Sandbox(self.limits, requester)

    def slots(self) -> FairSlots:
        """The slots of this process for these limits (shared by every Sandbox with the same bounds)."""
        limits = self.limits
        key = (limits.concurrent_runs, limits.queued_runs, limits.queued_runs_per_requester)
        with self._slot_lock:
            if key not in self._slots:
                self._slots[key] = FairSlots(*key, typical_seconds=min(limits.wall_seconds, 10))
            return self._slots[key]

    def _command(self, argv: list[str], inputs: dict[str, Path], outputs_fd: int, cgroup: RunCgroup | None,
                 seccomp_fd: int) -> tuple[list[str], dict[str, str]]:
        limits = self.limits
        sandbox = bwrap.command(
            limits.bwrap,
            # the tmpfs first: binds below it (a checkout, venv or data directory under /tmp) are mounted over it
            before_mounts=[*bwrap.tmpfs("/tmp", limits.tmp_mb), *bwrap.tmpfs(RUN_MOUNT, limits.output_mb)],
            mounts=[
                *bwrap.python_mounts(), *bwrap.ro_bind(SANDBOX_CODE_DIR, CODE_MOUNT),
                *[arg for name, path in inputs.items() for arg in bwrap.ro_bind(path, f"{INPUT_MOUNT}/{name}")],
            ],
            shm_mb=limits.shm_mb,
            workdir=RUN_MOUNT,
            env={"PATH": "/usr/bin:/bin", "HOME": RUN_MOUNT, "PYTHONPATH": CODE_MOUNT, "PYTHONHASHSEED": "0",
                 "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"},
            program=[sys.executable, *argv, "--outputs-fd", str(outputs_fd)],
        )
        rlimits = {**limits.rlimits(), "cpu": limits.cpu_seconds}
        if cgroup is None:  # the operator allowed runs without a cgroup: per-process caps (RLIMIT_NPROC binds unless root)
            rlimits |= {"as": limits.memory_bytes, "nproc": limits.processes + len(psutil.pids())}
        return bwrap.limited(sandbox, rlimits=rlimits, cgroup=cgroup, seccomp_fd=seccomp_fd)

    def execute(self, run_dir: Path, argv: list[str], *, inputs: dict[str, Path], outputs: tuple[str, ...]) -> Outcome:
        """Runs `python argv... --outputs-fd N` in the sandbox with inputs bound read-only under /sandbox/in;
        the named outputs come back into run_dir (host-made files). Kills the tree at the wall-time limit."""
        self.ensure_available()
        with self.slots().slot(self.requester):
            return self._execute(run_dir, argv, inputs, outputs)

    def _run_cgroup(self) -> RunCgroup | None:
        try:
            return self.limits.run_cgroup()
        except IsolationUnavailable as exc:
            raise SandboxUnavailable(f"script execution refused: {exc}") from None

    def _execute(self, run_dir: Path, argv: list[str], inputs: dict[str, Path], outputs: tuple[str, ...]) -> Outcome:
        cgroup = self._run_cgroup()  # first: a run refused for want of isolation leaves nothing behind
        stderr_path = run_dir.parent / f"{run_dir.name}.stderr"
        record = RunRecord(run_dir)
        started = time.monotonic()
        try:
            output_dir = run_dir / f"out-{uuid.uuid4().hex[:8]}"
            output_dir.mkdir()
            read_end, write_end = os.pipe()
            receiver = _OutputReceiver(read_end, output_dir, outputs, self.limits.output_mb * MEGABYTE)
            with open(stderr_path, "wb") as stderr:
                seccomp_fd = seccomp.program_fd()
                command, chain_env = self._command(argv, inputs, write_end, cgroup, seccomp_fd)
                try:
                    process = subprocess.Popen(
                        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True,
                        pass_fds=(write_end, seccomp_fd), env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **chain_env},
                    )
                except OSError as exc:
                    receiver.join()  # closes the read end
                    raise SandboxUnavailable(f"sandbox could not start: {exc}") from None
                finally:
                    os.close(write_end)
                    os.close(seccomp_fd)
                record.write(process.pid)
                receiver.start(on_overflow=lambda: self._kill(process, cgroup))
                timed_out = False
                try:
                    process.wait(timeout=self.limits.wall_seconds)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    self._kill(process, cgroup)
                    process.wait()
                receiver.join()
            return Outcome(process.returncode, _tail(stderr_path), timed_out, time.monotonic() - started,
                           record.cancelled, receiver.received, receiver.error)
        finally:
            if cgroup is not None:
                cgroup.remove()
            record.remove()
            stderr_path.unlink(missing_ok=True)

    @staticmethod
    def _kill(process: subprocess.Popen, cgroup: RunCgroup | None) -> None:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # bwrap dies; --die-with-parent ends its pid namespace
        except ProcessLookupError:
            pass
        if cgroup is not None:
            cgroup.kill_all()

    def ensure_available(self) -> None:
        problem = self._probes.problem(self.limits, self._probe)
        if problem:
            raise SandboxUnavailable(f"script execution refused: the sandbox is unavailable ({problem})")

    def _probe(self) -> str | None:
        if problem := isolation_problem(self.limits.bwrap):
            return problem
        probe_dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"sandbox-probe-{uuid.uuid4().hex[:8]}"
        probe_dir.mkdir()
        try:
            # the probe imports every library a run may use: CPU or wall limits set very low for runs (or a busy
            # host) must not fail it
            probe_limits = replace(self.limits, cpu_seconds=max(self.limits.cpu_seconds, PROBE_CPU_SECONDS),
                                   wall_seconds=max(self.limits.wall_seconds, PROBE_WALL_SECONDS))
            probing = self if probe_limits == self.limits else Sandbox(probe_limits)
            outcome = probing._execute(probe_dir, [f"{CODE_MOUNT}/probe.py"], {}, ("probe",))
            if outcome.returncode != 0 or outcome.outputs.get("probe") is None or outcome.outputs["probe"].read_text() != "ok":
                return outcome.stderr_tail[-500:].strip() or outcome.output_error or f"exit code {outcome.returncode}"
        except SandboxUnavailable as exc:
            return str(exc.detail).removeprefix("script execution refused: ")
        except OSError as exc:
            return str(exc)
        finally:
            shutil.rmtree(probe_dir, ignore_errors=True)
        return None

    def isolation_summary(self) -> str:
        """The startup log line: which isolation runs get here, or why they are refused."""
        return self.limits.cgroup_policy.startup_line("edit-service sandbox")

    # --- the two jobs ------------------------------------------------------------------------------------------

    def build(self, script: str, params: dict, run_dir: Path, kind: ModelKind = IFC, inputs: dict[str, Path] | None = None) -> tuple[Path, dict, float]:
        """Runs build(params, out_path); returns (product path, recorded map, seconds) or raises RunFailed. `inputs`
        are further files the script reads (read-only under /sandbox/in, e.g. the source drawing of a cad->ifc model)."""
        (run_dir / "script.py").write_text(script, encoding="utf-8")
        (run_dir / "params.json").write_text(json.dumps(params, allow_nan=False), encoding="utf-8")
        outcome = self.execute(
            run_dir, [f"{CODE_MOUNT}/run_build.py", f"{INPUT_MOUNT}/script.py", f"{INPUT_MOUNT}/params.json", kind.build_output],
            inputs={**(inputs or {}), "script.py": run_dir / "script.py", "params.json": run_dir / "params.json"}, outputs=(kind.build_output, "map.json"),
        )
        self._raise_for(outcome, "the build script")
        if kind.build_output not in outcome.outputs:
            raise RunFailed(f"the build script finished without writing {'an' if kind.what[0] in 'AEIOU' else 'a'} {kind.what} to out_path")
        try:
            recorded = json.loads(outcome.outputs["map.json"].read_text(encoding="utf-8"))
        except (KeyError, OSError, ValueError):
            raise RunFailed("the build run wrote no readable script map") from None
        return outcome.outputs[kind.build_output], recorded, outcome.seconds

    def inspect(self, run_dir: Path, product: Path, validate: bool = True, kind: ModelKind = IFC) -> dict:
        """Validates (optionally) and snapshots a product (bound read-only); returns the snapshot or raises RunFailed."""
        return self.inspect_with_outputs(run_dir, product, validate, kind)[0]

    def inspect_with_outputs(self, run_dir: Path, product: Path, validate: bool = True, kind: ModelKind = IFC) -> tuple[dict, dict[str, Path]]:
        """inspect(), plus the paths of the kind's other outputs (a drawing's render.json) in run_dir."""
        input_name = f"model{kind.suffix}"
        argv = [f"{CODE_MOUNT}/{kind.inspector}", f"{INPUT_MOUNT}/{input_name}"] + ([] if validate else ["--no-validate"])
        outcome = self.execute(run_dir, argv, inputs={input_name: product}, outputs=kind.inspector_outputs)
        self._raise_for(outcome, f"{kind.what} validation" if validate else f"reading the {kind.what}")
        try:
            snapshot = json.loads(outcome.outputs["snapshot.json"].read_text(encoding="utf-8"))
        except (KeyError, OSError, ValueError):
            raise RunFailed("the inspection wrote no readable snapshot") from None
        missing = [name for name in kind.extra_outputs if name not in outcome.outputs]
        if missing:
            raise RunFailed(f"the inspection wrote no {', '.join(missing)}")
        return snapshot, {name: outcome.outputs[name] for name in kind.extra_outputs}

    def _raise_for(self, outcome: Outcome, what: str) -> None:
        if outcome.cancelled:
            raise RunFailed(f"{what} was cancelled; nothing was published")
        if outcome.timed_out:
            raise RunFailed(f"{what} exceeded the time limit of {self.limits.wall_seconds:g} s; the whole process tree was killed\n{outcome.stderr_tail}")
        if outcome.output_error:
            raise RunFailed(f"{what}: {outcome.output_error}\n{outcome.stderr_tail}")
        if outcome.returncode in (-signal.SIGXCPU, -signal.SIGKILL, 137):
            raise RunFailed(f"{what} was stopped by a resource limit (CPU {self.limits.cpu_seconds} s, memory {self.limits.memory_mb} MB, {self.limits.processes} processes)\n{outcome.stderr_tail}")
        if outcome.returncode == bwrap.CGROUP_JOIN_FAILED:
            raise SandboxUnavailable("script execution refused: isolation unavailable: the run could not join its cgroup")
        if outcome.returncode != 0:
            raise RunFailed(f"{what} failed (exit code {outcome.returncode}):\n{outcome.stderr_tail}")


class _OutputReceiver:
    """Reads the run's output frames from the pipe into files it creates in run_dir, within the size cap."""

    def __init__(self, fd: int, run_dir: Path, expected: tuple[str, ...], limit: int):
        self.fd, self.run_dir, self.expected, self.limit = fd, run_dir, expected, limit
        self.received: dict[str, Path] = {}
        self.error = ""
        self.thread: threading.Thread | None = None

    def start(self, on_overflow) -> None:
        self.thread = threading.Thread(target=self._read, args=(on_overflow,), daemon=True)
        self.thread.start()

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()
        else:
            os.close(self.fd)

    def _read(self, on_overflow) -> None:
        total = 0
        with os.fdopen(self.fd, "rb") as channel:
            while header := channel.readline(512):
                try:
                    frame = json.loads(header)
                    name, size = frame["name"], int(frame["size"])
                except (ValueError, KeyError, TypeError):
                    self.error = "the run sent malformed output"
                    break
                if name not in self.expected or not OUTPUT_NAME_RE.match(name) or name in self.received or size < 0:
                    self.error = f"the run sent an unexpected output {name!r}"
                    break
                total += size
                if total > self.limit:
                    self.error = f"the run's outputs exceed {self.limit // MEGABYTE} MB"
                    on_overflow()
                    break
                target = self.run_dir / name
                descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                with os.fdopen(descriptor, "wb") as out:
                    remaining = size
                    while remaining and (chunk := channel.read(min(remaining, 1 << 20))):
                        out.write(chunk)
                        remaining -= len(chunk)
                if remaining:
                    self.error = f"the run's output {name} was cut short"
                    target.unlink()
                    break
                self.received[name] = target
            while channel.read(1 << 20):  # drain, so the writer never blocks on a full pipe
                pass
