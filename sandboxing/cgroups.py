"""A cgroup per sandboxed run: a process-count cap (pids) and a memory cap that bound the whole process tree of the
run, not each process (rlimits are per process, RLIMIT_NPROC is not enforced for uid 0 outside a user namespace, and
tmpfs pages are charged to no rlimit at all). cgroup v2 (unified) or the v1 pids and memory hierarchies, below this
process's own cgroup under `root` (the cgroup file system's mount point, /sys/fs/cgroup by default).

create() raises CgroupUnavailable with the reason when no such cgroup can be made; the callers refuse to run then,
unless their operator explicitly allowed runs without one.

A run cgroup's name says who made it (the owner's pid namespace, pid and start time), so that run cgroups whose owner
died (a worker or service killed with -9 mid-run, where nobody removed them) are found and removed: by remove_stale
at a service's start and before every new run cgroup, in whichever process runs next.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_ROOT = Path("/sys/fs/cgroup")
NAME_PREFIX = "sandbox-run-"
# sandbox-run-<pid namespace inode>-<owner pid>-<owner start time in clock ticks>-<random>
OWNED_NAME = re.compile(rf"^{NAME_PREFIX}(\d+)-(\d+)-(\d+)-[0-9a-f]+$")
UNOWNED_STALE_SECONDS = 60  # a name without its owner (made by an older version): removed when empty for this long
REMOVE_WAIT_SECONDS = 5
SWEEP_WAIT_SECONDS = 0.5

_in_use: set[str] = set()  # names of this process's run cgroups from create() until remove() ends
_in_use_lock = threading.Lock()


class CgroupUnavailable(Exception):
    """No per-run cgroup with memory and pids caps can be made here; the message says why."""


def _start_time(pid: int | str) -> str | None:
    """A living process's start time (clock ticks after boot, /proc/<pid>/stat field 22), which with the pid names
    the process; None for a process that is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # from field 3 (state) on: the command name may hold anything
    return None if fields[0] == "Z" else fields[19]


def _pid_namespace() -> str:
    return str(os.stat("/proc/self/ns/pid").st_ino)


def _run_name() -> str:
    pid = os.getpid()
    return f"{NAME_PREFIX}{_pid_namespace()}-{pid}-{_start_time(pid)}-{uuid.uuid4().hex[:8]}"


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

    @property
    def names(self) -> set[str]:
        return {d.name for d in self.directories}

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

    def remove(self, wait_seconds: float = REMOVE_WAIT_SECONDS) -> None:
        """Kills what is left and removes the cgroups (a cgroup with processes cannot be removed: wait a little; what
        is still there after wait_seconds is left to remove_stale)."""
        deadline, names = time.monotonic() + wait_seconds, self.names
        while True:
            self.kill_all()
            for directory in list(self.directories):
                try:
                    directory.rmdir()
                    self.directories.remove(directory)
                except FileNotFoundError:
                    self.directories.remove(directory)
                except OSError:
                    pass
            if not self.directories or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        with _in_use_lock:
            _in_use.difference_update(names)


def _make(parent: Path, run_name: str, limits: dict[str, str], optional: dict[str, str] | None = None) -> Path:
    """A child cgroup `run_name` of `parent` with the limits written; raises CgroupUnavailable naming what failed."""
    directory = parent / run_name
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
    """A cgroup (v2) or a pair (v1 pids + memory) for one run with both caps (swap included where accounted); the run
    cgroups of dead owners are removed first."""
    root = Path(root)
    try:
        own = _own_paths()
    except OSError as exc:
        raise CgroupUnavailable(f"cannot read /proc/self/cgroup: {exc.strerror or exc}") from None
    if not root.is_dir():
        raise CgroupUnavailable(f"{root} does not exist (no cgroup file system mounted there)")
    _sweep(_parents(root, own))
    name = _run_name()
    with _in_use_lock:
        _in_use.add(name)  # before the folder exists: a sweep in another thread must never take it for a leftover
    try:
        return _create(name, max_processes, memory_bytes, root, own)
    except CgroupUnavailable:
        with _in_use_lock:
            _in_use.discard(name)
        raise


def _create(name: str, max_processes: int, memory_bytes: int, root: Path, own: dict[str, str]) -> RunCgroup:
    if _is_v2(root, own):
        directory = _make(root / own[""].lstrip("/"), name, {"pids.max": str(max_processes), "memory.max": str(memory_bytes)},
                          {"memory.swap.max": "0"})
        return RunCgroup([directory], version=2)
    if "pids" in own and "memory" in own:
        pids = _make(root / "pids" / own["pids"].lstrip("/"), name, {"pids.max": str(max_processes)})
        try:
            memory = _make(root / "memory" / own["memory"].lstrip("/"), name, {"memory.limit_in_bytes": str(memory_bytes)},
                           {"memory.memsw.limit_in_bytes": str(memory_bytes)})
        except CgroupUnavailable:
            RunCgroup([pids], version=1).remove()
            raise
        return RunCgroup([pids, memory], version=1)
    raise CgroupUnavailable(f"neither a cgroup v2 hierarchy nor the v1 pids and memory hierarchies are available under {root}")


def _is_v2(root: Path, own: dict[str, str]) -> bool:
    return (root / "cgroup.controllers").exists() and "" in own


def _parents(root: Path, own: dict[str, str]) -> list[Path]:
    """Where this process's run cgroups are made: below its own cgroup (v2), or its own pids and memory cgroups (v1)."""
    if _is_v2(root, own):
        return [root / own[""].lstrip("/")]
    return [root / controller / own[controller].lstrip("/") for controller in ("pids", "memory") if controller in own]


def describe(root: Path = DEFAULT_ROOT) -> tuple[str | None, str]:
    """(problem or None, what was found): tries to make (and removes) a small cgroup with both caps."""
    try:
        cgroup = create(8, 64 * 1024 * 1024, root)
    except CgroupUnavailable as exc:
        return str(exc), ""
    found = f"cgroup v{cgroup.version} ({', '.join(str(d.parent) for d in cgroup.directories)})"
    cgroup.remove()
    return None, found


def remove_stale(root: Path = DEFAULT_ROOT) -> None:
    """Removes the run cgroups left behind under this process's cgroup: those whose owner process is gone (killed
    with their processes), this process's own that a run could not remove in time, and empty ones without an owner
    in their name that are older than UNOWNED_STALE_SECONDS."""
    try:
        own = _own_paths()
    except OSError:
        return
    _sweep(_parents(Path(root), own))


def _sweep(parents: list[Path]) -> None:
    namespace, me, now = _pid_namespace(), str(os.getpid()), time.time()
    for parent in parents:
        for directory in parent.glob(f"{NAME_PREFIX}*"):
            owned = OWNED_NAME.match(directory.name)
            if owned is None:
                try:
                    if now - directory.stat().st_mtime > UNOWNED_STALE_SECONDS:
                        directory.rmdir()  # only when empty: it may be a run of a process that still lives
                except OSError:
                    pass
                continue
            owner_namespace, owner, started = owned.groups()
            if owner_namespace != namespace:
                continue  # an owner this process cannot see: its own service sweeps it
            if owner == me:
                with _in_use_lock:  # looked up after the glob: a name is in use before its folder exists
                    left_behind = directory.name not in _in_use
            else:
                left_behind = _start_time(owner) != started
            if left_behind:
                RunCgroup([directory]).remove(SWEEP_WAIT_SECONDS)
