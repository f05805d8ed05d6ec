"""A cgroup per sandbox run, where this process may create one: a process-count cap (pids) and a memory cap that
bound the whole process tree of the run, not each process (rlimits are per process, and RLIMIT_NPROC is not enforced
for uid 0 at all). cgroup v2 (unified) or the v1 pids and memory hierarchies; None where neither is writable."""

from __future__ import annotations

import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


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

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.directories]

    def kill_all(self) -> None:
        for directory in self.directories:
            try:
                pids = (directory / "cgroup.procs").read_text().split()
            except OSError:
                continue
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def remove(self) -> None:
        """Kills what is left and removes the cgroups (a cgroup with processes cannot be removed: wait a little)."""
        for _ in range(50):
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


def _make(parent: Path, limits: dict[str, str]) -> Path | None:
    directory = parent / f"sandbox-run-{uuid.uuid4().hex[:12]}"
    try:
        directory.mkdir()
    except OSError:
        return None
    try:
        for name, value in limits.items():
            (directory / name).write_text(value)
    except OSError:
        directory.rmdir()
        return None
    return directory


def create(max_processes: int, memory_bytes: int) -> RunCgroup | None:
    """A cgroup (v2) or a pair (v1 pids + memory) for one run with both caps; None when that is not possible here."""
    try:
        own = _own_paths()
    except OSError:
        return None
    if "" in own and (CGROUP_ROOT / "cgroup.controllers").exists():
        directory = _make(CGROUP_ROOT / own[""].lstrip("/"), {"pids.max": str(max_processes), "memory.max": str(memory_bytes)})
        return RunCgroup([directory]) if directory else None
    if "pids" in own and "memory" in own:
        pids = _make(CGROUP_ROOT / "pids" / own["pids"].lstrip("/"), {"pids.max": str(max_processes)})
        memory = _make(CGROUP_ROOT / "memory" / own["memory"].lstrip("/"), {"memory.limit_in_bytes": str(memory_bytes), "memory.memsw.limit_in_bytes": str(memory_bytes)}) if pids else None
        if memory is None:  # memsw is absent without swap accounting
            memory = _make(CGROUP_ROOT / "memory" / own["memory"].lstrip("/"), {"memory.limit_in_bytes": str(memory_bytes)}) if pids else None
        if pids and memory:
            return RunCgroup([pids, memory])
        RunCgroup([d for d in (pids, memory) if d]).remove()
    return None
