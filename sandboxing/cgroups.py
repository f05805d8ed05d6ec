"""A cgroup per sandboxed run: a process-count cap (pids) and a memory cap that bound the whole process tree of the
run, not each process (rlimits are per process, RLIMIT_NPROC is not enforced for uid 0 outside a user namespace, and
tmpfs pages are charged to no rlimit at all). cgroup v2 (unified) or the v1 pids and memory hierarchies, below this
process's own cgroup under `root` (the cgroup file system's mount point, /sys/fs/cgroup by default).

create() raises CgroupUnavailable with the reason when no such cgroup can be made; the callers refuse to run then,
unless their operator explicitly allowed runs without one.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_ROOT = Path("/sys/fs/cgroup")
NAME_PREFIX = "sandbox-run-"


class CgroupUnavailable(Exception):
    """No per-run cgroup with memory and pids caps can be made here; the message says why."""


def _own_paths() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    paths = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


@dataclass
class RunCgroup:
    directories: list[Path] = field(default_factory=list)
    version: int = 2

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.directories]

    def join(self, pid: int) -> None:
        """Moves a process (host pid) into the run's cgroups; its later children follow it there."""
        for procs in self.procs_files:
            Path(procs).write_text(str(pid))

    def pids(self) -> set[int]:
        found = set()
        for directory in self.directories:
            try:
                found.update(int(pid) for pid in (directory / "cgroup.procs").read_text().split())
            except OSError:
                continue
        return found

    def kill_all(self) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the run for exceeding the memory cap."""
        for directory in self.directories:
            for name in ("memory.events", "memory.oom_control"):  # v2, v1
                try:
                    lines = (directory / name).read_text().splitlines()
                except OSError:
                    continue
                counters = dict(line.split() for line in lines if len(line.split()) == 2)
                if int(counters.get("oom_kill", 0)) > 0:
                    return True
        return False

    def remove(self) -> None:
        """Kills what is left and removes the cgroups (a cgroup with processes cannot be removed: wait a little)."""
        for _ in range(250):
            self.kill_all()
            for directory in list(self.directories):
                try:
                    directory.rmdir()
                    self.directories.remove(directory)
                except FileNotFoundError:
                    self.directories.remove(directory)
                except OSError:
                    pass
            if not self.directories:
                return
            time.sleep(0.02)


def _make(parent: Path, limits: dict[str, str], optional: dict[str, str] | None = None) -> Path:
    """A child cgroup of `parent` with the limits written; raises CgroupUnavailable naming what failed."""
    directory = parent / f"{NAME_PREFIX}{uuid.uuid4().hex[:12]}"
    try:
        directory.mkdir()
    except OSError as exc:
        raise CgroupUnavailable(f"cannot create a cgroup under {parent}: {exc.strerror or exc}") from None
    try:
        # a cgroup file system creates cgroup.procs itself; a plain folder does not (and would accept any file)
        if not (directory / "cgroup.procs").exists():
            raise CgroupUnavailable(f"{parent} is not a cgroup hierarchy")
        for name, value in limits.items():
            if not (directory / name).exists():
                raise CgroupUnavailable(f"{name} is missing in cgroups under {parent} (controller not enabled for child cgroups)")
            try:
                (directory / name).write_text(value)
            except OSError as exc:
                raise CgroupUnavailable(f"cannot set {name} in {directory}: {exc.strerror or exc}") from None
        for name, value in (optional or {}).items():
            try:
                (directory / name).write_text(value)
            except OSError:
                pass  # e.g. memsw/swap files are absent without swap accounting
    except CgroupUnavailable:
        try:
            directory.rmdir()  # nothing was written into a folder that is not a cgroup
        except OSError:
            pass
        raise
    return directory


def create(max_processes: int, memory_bytes: int, root: Path = DEFAULT_ROOT) -> RunCgroup:
    """A cgroup (v2) or a pair (v1 pids + memory) for one run with both caps (swap included where accounted)."""
    root = Path(root)
    try:
        own = _own_paths()
    except OSError as exc:
        raise CgroupUnavailable(f"cannot read /proc/self/cgroup: {exc.strerror or exc}") from None
    if not root.is_dir():
        raise CgroupUnavailable(f"{root} does not exist (no cgroup file system mounted there)")
    if (root / "cgroup.controllers").exists() and "" in own:
        directory = _make(root / own[""].lstrip("/"), {"pids.max": str(max_processes), "memory.max": str(memory_bytes)},
                          {"memory.swap.max": "0"})
        return RunCgroup([directory], version=2)
    if "pids" in own and "memory" in own:
        pids = _make(root / "pids" / own["pids"].lstrip("/"), {"pids.max": str(max_processes)})
        try:
            memory = _make(root / "memory" / own["memory"].lstrip("/"), {"memory.limit_in_bytes": str(memory_bytes)},
                           {"memory.memsw.limit_in_bytes": str(memory_bytes)})
        except CgroupUnavailable:
            RunCgroup([pids], version=1).remove()
            raise
        return RunCgroup([pids, memory], version=1)
    raise CgroupUnavailable(f"neither a cgroup v2 hierarchy nor the v1 pids and memory hierarchies are available under {root}")


def describe(root: Path = DEFAULT_ROOT) -> tuple[str | None, str]:
    """(problem or None, what was found): tries to make (and removes) a small cgroup with both caps."""
    try:
        cgroup = create(8, 64 * 1024 * 1024, root)
    except CgroupUnavailable as exc:
        return str(exc), ""
    found = f"cgroup v{cgroup.version} ({', '.join(str(d.parent) for d in cgroup.directories)})"
    cgroup.remove()
    return None, found


def remove_stale(root: Path = DEFAULT_ROOT, older_than_seconds: float = 60) -> None:
    """Empty run cgroups left behind by a process that died mid-run (a cgroup with processes is never removed)."""
    root = Path(root)
    try:
        own = _own_paths()
    except OSError:
        return
    parents = [root / own[""].lstrip("/")] if "" in own and (root / "cgroup.controllers").exists() else [
        root / controller / own[controller].lstrip("/") for controller in ("pids", "memory") if controller in own
    ]
    now = time.time()
    for parent in parents:
        for directory in parent.glob(f"{NAME_PREFIX}*"):
            try:
                if now - directory.stat().st_mtime > older_than_seconds:
                    directory.rmdir()
            except OSError:
                pass
