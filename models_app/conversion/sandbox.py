"""Confinement of conversions (command lines, cgroups and checks from the shared `sandboxing` package).

Both stages parse untrusted input (an uploaded or script-made IFC), so both run in bubblewrap: no network, uid 65534
without nested user namespaces, new pid/ipc/uts/cgroup namespaces, a read-only root made of the system folders, the
interpreter and its site-packages, the conversion code (models_app only) or the converter's own folders, and
nothing writable at all: every file a conversion reads or writes is a descriptor the worker opened in the
conversion's own work folder, so the configuration file (API token, LLM key), the data directory and other models
are not even visible. Each conversion gets its own cgroup with a memory cap (conversionMemoryMB) and a process cap
for both stages; where none can be made conversions are refused, unless the operator set conversionAllowNoCgroup
(then RLIMIT_AS for the ifcopenshell stage and V8's heap limit for node are the only memory caps).

The ifcopenshell stage forks from a zygote (zygote.py): one sandboxed Python per worker process that has imported
ifcopenshell once; each child is moved into the conversion's cgroup (by its host pid) before it touches the IFC.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from sandboxing import bwrap
from sandboxing.limits import StageLimits
from sandboxing.probe import isolation_problem
from sandboxing.zygote import SandboxedZygote, ZygotePool

ALLOW_NO_CGROUP = "conversionAllowNoCgroup"


class ConversionUnavailable(Exception):
    """The conversion cannot run confined here (the message says why); nothing was converted."""


@dataclass(frozen=True)
class ConversionLimits(StageLimits):
    """Of both stages of a conversion, and of an IDS check (the same kind of work on the same IFC)."""

    memory_mb: int = 4096
    # processes (64): the iterator's threads, node's own threads
    file_size_mb: int = 16384  # the geometry records of the largest IFC stay far below
    # geometry threads per conversion: one. Measured here (2 cores shared with a second worker and other processes),
    # ifcopenshell's iterator with two threads took 1.5x to 7x as long as with one (tower 100x30: 4.9-22 s vs 3.2 s)
    threads: int = 1

    allow_no_cgroup_setting: ClassVar[str] = ALLOW_NO_CGROUP

    @classmethod
    def from_config(cls, config) -> "ConversionLimits":
        return cls(memory_mb=config.conversionMemoryMB, cgroup_root=str(config.conversionCgroupRoot),
                   allow_no_cgroup=config.conversionAllowNoCgroup)


def _both_paths(path: Path) -> list[Path]:
    """A path as given and as resolved (a checkout's converter/dist may be a link into another checkout)."""
    return list(dict.fromkeys([Path(os.path.abspath(path)), path.resolve()]))


def converter_mounts(node_bin: str, converter_script: Path, protected: list[Path]) -> list[str]:
    """Read-only binds for node and the converter: the script's folder and every node_modules above it (where node
    looks for modules), and node's install prefix when it is not under /usr. A folder that holds a protected path
    (the configuration file, the data directory) is refused rather than exposed."""
    folders = []
    for script_dir in _both_paths(converter_script.parent):
        folders.append(script_dir)
        folders += [parent / "node_modules" for parent in (script_dir, *script_dir.parents) if (parent / "node_modules").is_dir()]
    prefix = node_executable(node_bin).parent.parent
    if not str(prefix).startswith("/usr"):
        folders.append(prefix)
    mounts = []
    for folder in dict.fromkeys(path for given in folders for path in _both_paths(given)):
        for secret in protected:
            if secret == folder or folder in secret.parents:
                raise ConversionUnavailable(
                    f"converterScript: its folder {folder} also holds {secret}, which the conversion sandbox must not "
                    "see; put the converter into a folder of its own")
        mounts += bwrap.ro_bind(folder)
    return mounts


def node_executable(node_bin: str) -> Path:
    """nodeBin resolved (through /etc/alternatives and the like, which the sandbox does not have)."""
    node = shutil.which(node_bin)
    if node is None:
        raise ConversionUnavailable(f"cannot start xeokit-convert: {node_bin!r} (configuration key nodeBin): not found")
    return Path(node).resolve()


def node_command(limits: ConversionLimits, node_bin: str, converter_script: Path, converter_args: list[str],
                 protected: list[Path], *, optimize: bool = True) -> list[str]:
    """`optimize=False` runs node without TurboFan: on a small input its compilations (synchronous with
    --single-threaded) cost more time than they save and map ~5 MB of compiler code."""
    heap_mb = max(256, limits.memory_mb - 256)  # V8 fails cleanly below the cgroup cap instead of being killed
    return bwrap.command(
        limits.bwrap,
        mounts=converter_mounts(node_bin, converter_script, protected),
        workdir="/",
        env={"PATH": "/usr/bin:/bin", "HOME": "/", "LANG": "C.UTF-8"},
        # --optimize-for-size: V8 collects garbage sooner (tower 100x30: 223 MB instead of 312 MB, same time);
        # --single-threaded: no V8 worker threads (a few MB less, the other core is for the other worker)
        program=[str(node_executable(node_bin)), "--optimize-for-size", "--single-threaded", *([] if optimize else ["--no-opt"]),
                 f"--max-old-space-size={heap_mb}", str(converter_script), *converter_args],
    )


class Zygote(SandboxedZygote):
    """The sandboxed fork server of one worker process (zygote.py); started on first use, again if it died."""

    module = "models_app.conversion.zygote"
    package = "models_app"
    failures = (ConversionUnavailable, TimeoutError)

    def check_isolation(self) -> None:
        if problem := isolation_problem(self.limits.bwrap):
            raise ConversionUnavailable(f"conversion sandbox unavailable: {problem}")

    def start_failed(self, exc: OSError) -> Exception:
        return ConversionUnavailable(f"conversion sandbox could not start: {exc}")

    def not_started(self, exc: Exception) -> Exception:
        return ConversionUnavailable(f"the conversion sandbox did not start: {exc}")

    def timed_out(self) -> Exception:
        return TimeoutError("the conversion sandbox did not answer in time")

    def ended(self, error: OSError | None, tail: str) -> Exception:
        return ConversionUnavailable(f"the conversion sandbox ended{f' ({error})' if error else ''}: {tail}")

    def child_not_found(self) -> Exception:
        return ConversionUnavailable("the conversion's process could not be found outside its sandbox")


_zygotes = ZygotePool(Zygote)


def zygote_for(limits: ConversionLimits) -> Zygote:
    return _zygotes.get(limits)
