"""The geometry work of a clash run in its own process (coordination_app.run_child), confined like an IDS check:
bubblewrap without network, nothing writable, only `coordination_app`, `models_app` (the clash-geometry format and,
when an IFC is to be meshed, the conversion's meshing: the agent's staged product) and the Python environment importable, every file a
descriptor opened here (an IFC to mesh read-only, its mesh a new file of the run's work folder), a per-run cgroup with a memory and process cap (refused without one unless the
operator opted in: conversionAllowNoCgroup), killed whole at the time limit or when the run is cancelled (the child
prints a heartbeat several times a second; should_stop is asked at each line)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from django.conf import settings

from coordination_app.engine.clashes import ClashFact, ElementSet
from coordination_app.engine import selection
from coordination_app.engine.errors import Cancelled
from coordination_app.run_child import MEMORY_EXIT_CODE
from models_app.public import ConversionLimits
from sandboxing import bwrap, seccomp
from sandboxing.limits import open_new, open_read, python_command
from sandboxing.probe import IsolationUnavailable, isolation_problem
from sandboxing.stage import ERROR_TAIL_BYTES, ConfinedProcess, Descriptors, StageTimeout

JOB_FILE = "job.json"
RESULT_FILE = "clashes.json"


@dataclass(frozen=True)
class ConfinedResult:
    """What the confined child found: the clashes, and the facts {GlobalId: {type, name, storey}} of each model it
    meshed (from that IFC, not from a conversion's metadata)."""

    clashes: list[ClashFact]
    facts: dict[str, dict]


class RunFailed(Exception):
    """The confined run could not finish (refused sandbox, memory cap, time limit, a crash); the message says why."""


def clash_time_limit_seconds() -> float:
    return float(os.environ.get("VIEWER_CLASH_TIMEOUT_SECONDS") or 3600)


def clash_memory_limit_mb() -> int:
    return int(os.environ.get("VIEWER_CLASH_MEMORY_MB") or 4096)


def _sides(sets: list[ElementSet] | None, spec: dict | None, meshes: dict[str, Path]) -> list[dict] | None:
    """The job's side: each set's model, matrix and elements; a model the child meshes carries the side's class
    filter (spec: the test's side) for the child to apply to the IFC's elements."""
    if sets is None:
        return None
    sides = []
    for item in sets:
        side = {"modelId": item.model_id, "matrix": [float(value) for value in item.matrix.reshape(-1)],
                "guids": None if item.guids is None else sorted(item.guids)}
        if item.model_id in meshes and selection.filters(spec):
            side["select"] = {"classes": spec.get("classes"), "exclude": spec.get("exclude") or []}
        sides.append(side)
    return sides


def _relay(line: str, on_progress: Callable[[str, float], None], should_stop: Callable[[], bool]) -> None:
    if should_stop():
        raise Cancelled("the clash run was cancelled")  # ConfinedProcess.finish kills the process on the way out
    try:
        message = json.loads(line)
        on_progress(str(message["phase"]), int(message["percent"]) / 100)
    except (ValueError, KeyError, TypeError):
        pass


def _open_mesh(path: Path) -> int:
    """A new file for the child to write a mesh into and read it back (both through /proc/self/fd)."""
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def find_clashes_confined(a: list[ElementSet], b: list[ElementSet] | None, *, kind: str, tolerance: float, distance: float, work_dir: Path,
                          on_progress: Callable[[str, float], None], should_stop: Callable[[], bool],
                          meshes: dict[str, Path] | None = None, specs: tuple[dict, dict | None] = ({}, None)) -> ConfinedResult:
    """engine.find_clashes in the confined child, the IFCs of `meshes` (model id -> IFC; their sets' geometry_path and
    guids are not read: the child meshes them, takes their facts and selects their elements by the class filters of
    `specs`, the test's sides a and b) there first; on_progress(phase "meshing" | "clashing", fraction of the phase).
    Cancelled when should_stop() turns true, RunFailed otherwise."""
    meshes = meshes or {}
    limits = replace(ConversionLimits.from_config(settings.VIEWER), memory_mb=clash_memory_limit_mb())
    if problem := isolation_problem(limits.bwrap):
        raise RunFailed(f"clash run refused: isolation unavailable: {problem}")
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        cgroup = limits.run_cgroup()
    except IsolationUnavailable as exc:
        raise RunFailed(f"clash run refused: {exc}") from None
    timeout = clash_time_limit_seconds()
    try:
        with Descriptors() as passed:
            paths = {item.model_id: item.geometry_path for item in [*a, *(b or [])] if item.model_id not in meshes}
            geometry = {model_id: f"/proc/self/fd/{passed.add(open_read(path))}" for model_id, path in paths.items()}
            mesh = {model_id: {"ifc": f"/proc/self/fd/{passed.add(open_read(ifc))}", "out": f"/proc/self/fd/{passed.add(_open_mesh(work_dir / f'{model_id}.bin'))}"}
                    for model_id, ifc in meshes.items()}
            (work_dir / JOB_FILE).write_text(json.dumps({"kind": kind, "tolerance": tolerance, "distance": distance, "a": _sides(a, specs[0], meshes),
                                                         "b": _sides(b, specs[1], meshes),
                                                         "geometry": geometry, "mesh": mesh}), encoding="utf-8")
            job, out = passed.add(open_read(work_dir / JOB_FILE)), passed.add(open_new(work_dir / RESULT_FILE))
            command = python_command(limits, [
                "-m", "coordination_app.run_child", "--job", f"/proc/self/fd/{job}", "--out", f"/proc/self/fd/{out}",
                "--memory-mb", "0" if cgroup else str(limits.memory_mb),
            ], packages=("coordination_app", "sandboxing", "models_app"))
            argv, chain_env = bwrap.limited(command, rlimits={**limits.rlimits(), "cpu": int(timeout) + 5}, cgroup=cgroup,
                                            seccomp_fd=passed.add(seccomp.program_fd()))
            stage = ConfinedProcess(argv, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **chain_env}, pass_fds=tuple(passed.fds))
        code = stage.finish(time.monotonic() + timeout, lambda line: _relay(line, on_progress, should_stop), cgroup)
        if code == bwrap.CGROUP_JOIN_FAILED:
            raise RunFailed("clash run refused: isolation unavailable: the run could not join its cgroup")
        if code == MEMORY_EXIT_CODE or (code != 0 and cgroup is not None and cgroup.oom_killed()):
            raise RunFailed(f"the clash run exceeded its memory cap of {limits.memory_mb} MB (VIEWER_CLASH_MEMORY_MB) and was stopped")
        if code != 0:
            raise RunFailed(stage.output.error("the clash run", code)[-ERROR_TAIL_BYTES:])
    except StageTimeout:
        raise RunFailed(f"the clash run exceeded the time limit of {timeout:g} s (VIEWER_CLASH_TIMEOUT_SECONDS) and was stopped") from None
    except OSError as exc:
        raise RunFailed(f"the clash run could not start: {exc.strerror or exc}") from None
    finally:
        if cgroup is not None:
            cgroup.remove()
    found = json.loads((work_dir / RESULT_FILE).read_text(encoding="utf-8"))
    return ConfinedResult(
        clashes=[ClashFact(a_model=item["aModel"], a_guid=item["aGuid"], b_model=item["bModel"], b_guid=item["bGuid"], point=tuple(item["point"]),
                           depth=item["depth"], distance=item["distance"]) for item in found["clashes"]],
        facts=found["facts"],
    )
