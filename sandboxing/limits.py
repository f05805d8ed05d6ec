"""The resource limits of one confined stage (a conversion, an IDS check, a build script or inspection of the edit
service), the reading of limits from settings, and the descriptors a stage is handed.

Each kind of stage subclasses StageLimits with its own defaults and the name of its operator switch for running
without a cgroup (`allow_no_cgroup_setting`); the cgroup, the rlimits and the startup line come from here.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Mapping

from sandboxing import bwrap
from sandboxing.bwrap import MEGABYTE
from sandboxing.cgroups import DEFAULT_ROOT, RunCgroup
from sandboxing.probe import CgroupPolicy

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CODE_MOUNT = "/sandbox/lib"  # where python_command mounts the project's packages a stage may import

# the words a yes/no setting may be given as in the environment (any case, surrounding blanks ignored)
TRUE_WORDS = ("1", "true", "yes")
FALSE_WORDS = ("", "0", "false", "no")


def environ_flag(environ: Mapping[str, str], name: str) -> bool:
    """A yes/no environment setting; unset or any other word is no."""
    return environ.get(name, "").strip().lower() in TRUE_WORDS


def environ_number(environ: Mapping[str, str], name: str, default, kind=int):
    """A number from the environment (`kind` int or float); unset or empty gives the default."""
    raw = environ.get(name)
    return kind(raw) if raw else default


@dataclass(frozen=True)
class StageLimits:
    bwrap: str = "bwrap"
    memory_mb: int = 2048  # the whole process tree of one run (its cgroup)
    processes: int = 64  # tasks (threads count) of one run
    open_files: int = 256
    file_size_mb: int = 1024  # any single file a run writes
    cgroup_root: str = str(DEFAULT_ROOT)
    allow_no_cgroup: bool = False

    allow_no_cgroup_setting: ClassVar[str] = ""

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb * MEGABYTE

    @property
    def cgroup_policy(self) -> CgroupPolicy:
        return CgroupPolicy(Path(self.cgroup_root), self.allow_no_cgroup, self.allow_no_cgroup_setting)

    def run_cgroup(self) -> RunCgroup | None:
        """A run's cgroup capping memory and processes; None only where the operator allowed runs without one.
        IsolationUnavailable otherwise."""
        return self.cgroup_policy.run_cgroup(self.processes, self.memory_bytes)

    def rlimits(self) -> dict[str, int]:
        return {"nofile": self.open_files, "fsize": self.file_size_mb * MEGABYTE}


def open_read(path: Path) -> int:
    """A descriptor to hand a stage for reading a file (never through a symbolic link)."""
    return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)


def open_new(path: Path) -> int:
    """A descriptor to hand a stage for writing a file that must not exist yet."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)


def python_command(limits: StageLimits, argv: list[str], packages: tuple[str, ...]) -> list[str]:
    """`python argv...` in the sandbox of the stages that parse an IFC with ifcopenshell (the conversion zygote's,
    an IDS check's), with only the project's `packages` importable (never the checkout, which holds the config)."""
    return bwrap.command(
        limits.bwrap,
        mounts=[*bwrap.python_mounts(), *(arg for package in packages for arg in bwrap.ro_bind(PROJECT_ROOT / package, f"{CODE_MOUNT}/{package}"))],
        workdir="/",
        env={"PATH": "/usr/bin:/bin", "HOME": "/", "PYTHONPATH": CODE_MOUNT, "PYTHONDONTWRITEBYTECODE": "1",
             "PYTHONHASHSEED": "0", "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
        program=[sys.executable, *argv],
    )
