"""Runs build scripts and IFC inspection inside bubblewrap.

No network, a private /tmp, read-only system, Python and venv, the run folder as the only writable place (nothing
else of the data directory is mounted), --die-with-parent, a new session and pid namespace, rlimits (CPU, DATA,
FSIZE, NOFILE), and a wall-time limit after which the whole process tree is killed. The exact sandbox is probed once
per configuration; when it cannot start, runs are refused (SandboxUnavailable), never run unsandboxed.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from edit_service.engine.errors import RunFailed, SandboxUnavailable

SANDBOX_CODE_DIR = Path(__file__).resolve().parent.parent / "sandbox"
RUN_MOUNT = "/sandbox/run"
CODE_MOUNT = "/sandbox/lib"
STDERR_TAIL_BYTES = 2048
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class SandboxLimits:
    bwrap: str = "bwrap"
    wall_seconds: float = 60
    cpu_seconds: int = 60
    memory_mb: int = 2048
    file_size_mb: int = 1024
    open_files: int = 256

    @classmethod
    def from_environment(cls, environ=os.environ) -> "SandboxLimits":
        def number(name, default, kind=float):
            raw = environ.get(name)
            return kind(raw) if raw else default

        return cls(
            bwrap=environ.get("EDIT_SANDBOX_BWRAP") or "bwrap",
            wall_seconds=number("EDIT_SANDBOX_WALL_SECONDS", 60.0),
            cpu_seconds=number("EDIT_SANDBOX_CPU_SECONDS", 60, int),
            memory_mb=number("EDIT_SANDBOX_MEMORY_MB", 2048, int),
            file_size_mb=number("EDIT_SANDBOX_FILE_SIZE_MB", 1024, int),
            open_files=number("EDIT_SANDBOX_OPEN_FILES", 256, int),
        )


@dataclass
class Outcome:
    returncode: int
    stderr_tail: str
    timed_out: bool
    seconds: float


def _system_mounts() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/lib", "/lib64", "/bin", "/sbin"):
        path = Path(top)
        if path.is_symlink():
            args += ["--symlink", os.readlink(top), top]
        elif path.is_dir():
            args += ["--ro-bind", top, top]
    for etc_file in ("/etc/ld.so.cache", "/etc/localtime"):
        if Path(etc_file).exists():
            args += ["--ro-bind", etc_file, etc_file]
    return args


def _python_mounts() -> list[str]:
    prefixes = []
    for prefix in {sys.base_prefix, sys.prefix, str(Path(sys.executable).resolve().parent.parent)}:
        if not prefix.startswith("/usr") and prefix not in prefixes:
            prefixes.append(prefix)
    args = []
    for prefix in sorted(prefixes):
        args += ["--ro-bind", prefix, prefix]
    return args


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - STDERR_TAIL_BYTES))
            return handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


class Sandbox:
    _probes: dict[SandboxLimits, str | None] = {}
    _probe_lock = threading.Lock()

    def __init__(self, limits: SandboxLimits):
        self.limits = limits

    def _command(self, run_dir: Path, argv: list[str], writable: bool = True) -> list[str]:
        return [
            self.limits.bwrap,
            "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL",
            *_system_mounts(), *_python_mounts(),
            "--ro-bind", str(SANDBOX_CODE_DIR), CODE_MOUNT,
            "--bind" if writable else "--ro-bind", str(run_dir), RUN_MOUNT,
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
            "--remount-ro", "/",  # the sandbox's own root stays read-only too
            "--chdir", RUN_MOUNT, "--clearenv",
            "--setenv", "PATH", "/usr/bin:/bin",
            "--setenv", "HOME", RUN_MOUNT,
            "--setenv", "PYTHONPATH", CODE_MOUNT,
            "--setenv", "PYTHONHASHSEED", "0",
            "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
            "--setenv", "LANG", "C.UTF-8",
            sys.executable, *argv,
        ]

    def _limit_resources(self) -> None:
        limits = self.limits
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
        memory = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
        size = limits.file_size_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        try:
            import ctypes

            ctypes.CDLL("libc.so.6").prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except OSError:
            pass

    def execute(self, run_dir: Path, argv: list[str], *, writable: bool = True) -> Outcome:
        """Runs `python argv...` in the sandbox with run_dir mounted at /sandbox/run; kills the tree at the limit."""
        self.ensure_available()
        stderr_path = run_dir.parent / f"{run_dir.name}.stderr"
        started = time.monotonic()
        with open(stderr_path, "wb") as stderr:
            try:
                process = subprocess.Popen(
                    self._command(run_dir, argv, writable),
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                    start_new_session=True, preexec_fn=self._limit_resources,
                )
            except OSError as exc:
                raise SandboxUnavailable(f"sandbox could not start: {exc}") from None
            timed_out = False
            try:
                process.wait(timeout=self.limits.wall_seconds)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(process.pid, signal.SIGKILL)  # bwrap dies; --die-with-parent ends its pid namespace
                process.wait()
        outcome = Outcome(process.returncode, _tail(stderr_path), timed_out, time.monotonic() - started)
        stderr_path.unlink(missing_ok=True)
        return outcome

    def ensure_available(self) -> None:
        with self._probe_lock:
            if self.limits not in self._probes:
                self._probes[self.limits] = self._probe()
            problem = self._probes[self.limits]
        if problem:
            raise SandboxUnavailable(f"script execution refused: the sandbox is unavailable ({problem})")

    def _probe(self) -> str | None:
        if shutil.which(self.limits.bwrap) is None:
            return f"bubblewrap binary {self.limits.bwrap!r} not found; install the bubblewrap package"
        probe_dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"sandbox-probe-{uuid.uuid4().hex[:8]}"
        probe_dir.mkdir()
        try:
            result = subprocess.run(
                self._command(probe_dir, ["-c", "import ifcopenshell, script_lib; open('probe', 'w').write('ok')"]),
                capture_output=True, timeout=60, preexec_fn=self._limit_resources,
            )
            if result.returncode != 0 or (probe_dir / "probe").read_text() != "ok":
                return result.stderr.decode("utf-8", "replace")[-500:].strip() or f"exit code {result.returncode}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        finally:
            shutil.rmtree(probe_dir, ignore_errors=True)
        return None

    # --- the two jobs ------------------------------------------------------------------------------------------

    def build(self, script: str, params: dict, run_dir: Path) -> tuple[Path, dict, float]:
        """Runs build(params, out_path); returns (IFC path, recorded map, seconds) or raises RunFailed."""
        (run_dir / "script.py").write_text(script, encoding="utf-8")
        (run_dir / "params.json").write_text(json.dumps(params), encoding="utf-8")
        outcome = self.execute(
            run_dir, [f"{CODE_MOUNT}/run_build.py", f"{RUN_MOUNT}/script.py", f"{RUN_MOUNT}/params.json", f"{RUN_MOUNT}/out.ifc", f"{RUN_MOUNT}/map.json"]
        )
        self._raise_for(outcome, "the build script")
        ifc = run_dir / "out.ifc"
        if not ifc.is_file():
            raise RunFailed("the build script finished without writing an IFC to out_path")
        try:
            recorded = json.loads((run_dir / "map.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise RunFailed("the build run wrote no readable script map") from None
        return ifc, recorded, outcome.seconds

    def inspect(self, run_dir: Path, ifc_name: str, validate: bool = True) -> dict:
        """Validates (optionally) and snapshots an IFC inside run_dir; returns the snapshot or raises RunFailed."""
        argv = [f"{CODE_MOUNT}/inspect_ifc.py", f"{RUN_MOUNT}/{ifc_name}", f"{RUN_MOUNT}/snapshot.json"]
        if not validate:
            argv.append("--no-validate")
        outcome = self.execute(run_dir, argv)
        self._raise_for(outcome, "IFC validation" if validate else "reading the IFC")
        return json.loads((run_dir / "snapshot.json").read_text(encoding="utf-8"))

    def _raise_for(self, outcome: Outcome, what: str) -> None:
        if outcome.timed_out:
            raise RunFailed(f"{what} exceeded the time limit of {self.limits.wall_seconds:g} s; the whole process tree was killed\n{outcome.stderr_tail}")
        if outcome.returncode == -signal.SIGXCPU or outcome.returncode == -signal.SIGKILL:
            raise RunFailed(f"{what} was stopped by a resource limit (signal {-outcome.returncode})\n{outcome.stderr_tail}")
        if outcome.returncode != 0:
            raise RunFailed(f"{what} failed (exit code {outcome.returncode}):\n{outcome.stderr_tail}")
