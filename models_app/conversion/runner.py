"""Runs one conversion, confined (see sandbox.py), under one time limit, relaying progress:
1. the ifcopenshell stage (pipeline.py) in a child forked from the worker's warm, sandboxed zygote: metadata.json,
   element-values.json and the geometry records, streamed;
2. node converter/dist/convert.mjs in its own sandbox: geometry records + metadata -> model.xkt (or, when
   ifcopenshell cannot open the IFC, the IFC itself through xeokit-convert's web-ifc parser).
Both stages run in the conversion's cgroup (memory and process caps), strictly one after the other, so their memory
peaks never add up. Every file either stage touches is a descriptor opened here, in the work folder.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from models_app.conversion.metadata import normalise_fallback_metadata
from models_app.conversion.pipeline import (
    CLASH_GEOMETRY_FILE,
    ELEMENT_BOUNDS_FILE,
    ELEMENT_VALUES_FILE,
    GEOMETRY_FILE,
    GEOREFERENCE_FILE,
    METADATA_FILE,
    STAGE_OUTPUTS,
)
from models_app.conversion import SHIPPED_CONVERTER
from models_app.conversion.sandbox import ConversionLimits, ConversionUnavailable, node_command, zygote_for
from sandboxing import bwrap, seccomp
from sandboxing.cgroups import RunCgroup
from sandboxing.limits import open_new, open_read
from sandboxing.probe import IsolationUnavailable
from sandboxing.stage import ERROR_TAIL_BYTES, ConfinedProcess, Descriptors, StageOutput, StageTimeout
from sandboxing.zygote_server import GO

log = logging.getLogger(__name__)

XKT_FILE = "model.xkt"
RAW_FALLBACK_METADATA = "fallback-metadata.json"
STOP_SECONDS = 10
# geometry records below this size are converted by node without its optimizing compiler (TurboFan). Measured here
# (the XKT stage alone, median of 7), without it the stage took 0.11 s instead of 0.16 s on IfcOpenHouse's 42 KB of
# records and 0.18 s instead of 0.20 s on tower 15x6's 370 KB, but 0.30 s instead of 0.28 s on duplex's 770 KB and
# 0.55 s instead of 0.45 s on tower 40x12's 2 MB; it also leaves ~5 MB of node's compiler code unmapped
OPTIMIZE_FROM_BYTES = 512 * 1024


class ConversionFailed(Exception):
    pass


@dataclass
class PipelineResult:
    ok: bool
    error: str = ""


def _time_limit(timeout_seconds: float) -> ConversionFailed:
    return ConversionFailed(f"conversion exceeded the time limit of {timeout_seconds:g} s and was stopped")


class _Conversion:
    def __init__(self, work_dir: Path, limits: ConversionLimits, deadline: float, timeout_seconds: float, on_progress):
        self.work_dir, self.limits, self.deadline, self.timeout_seconds = work_dir, limits, deadline, timeout_seconds
        self.on_progress = on_progress
        self.fallback: str | None = None
        self.cgroup: RunCgroup | None = None

    def relay(self, line: str) -> None:
        try:
            message = json.loads(line)
            if "fallback" in message:
                self.fallback = str(message["fallback"])
            elif "note" in message:
                log.info("conversion %s: %s", self.work_dir.name, message["note"])
            else:
                self.on_progress(message["phase"], message["percent"])
        except (ValueError, KeyError, TypeError):
            pass

    def create(self, name: str) -> int:
        return open_new(self.work_dir / name)

    def killed_by_memory_cap(self, code: int) -> bool:
        # a signal: negative for the forked child, 128 + signal through bwrap
        return (code < 0 or code > 128) and self.cgroup is not None and self.cgroup.oom_killed()

    def memory_error(self, name: str) -> ConversionFailed:
        return ConversionFailed(
            f"{name} exceeded the conversion memory cap of {self.limits.memory_mb} MB (configuration key conversionMemoryMB) "
            "and was stopped; raise the cap to convert this model")

    # --- stage 1: ifcopenshell, forked from the zygote -----------------------------------------------------------

    def ifcopenshell_stage(self, ifc_path: Path) -> None:
        zygote = zygote_for(self.limits)
        with zygote.lock:
            if not zygote.alive:
                zygote.start()
                self.deadline = time.monotonic() + self.timeout_seconds  # starting it is not the conversion's time
            with Descriptors() as sent:
                go_read, go_write = sent.pipe()
                progress_read, progress_write = os.pipe()
                stderr_read, stderr_write = os.pipe()
                output = StageOutput(os.fdopen(progress_read, "rb"), os.fdopen(stderr_read, "rb"))
                fds = {"go": go_read, "progress": sent.add(progress_write), "stderr": sent.add(stderr_write),
                       "ifc": sent.add(open_read(ifc_path)), "metadata": sent.add(self.create(METADATA_FILE)),
                       "values": sent.add(self.create(ELEMENT_VALUES_FILE)), "geometry": sent.add(self.create(GEOMETRY_FILE)),
                       "bounds": sent.add(self.create(ELEMENT_BOUNDS_FILE)), "clash": sent.add(self.create(CLASH_GEOMETRY_FILE)),
                       "georeference": sent.add(self.create(GEOREFERENCE_FILE))}
                job = {"threads": self.limits.threads, **({} if self.cgroup else {"memory_bytes": self.limits.memory_bytes})}
                try:
                    _, host_pid = zygote.fork(job, fds, self.deadline)
                except TimeoutError:
                    zygote.stop()
                    raise _time_limit(self.timeout_seconds) from None
                except ConversionUnavailable:
                    zygote.stop()
                    raise
                finally:
                    sent.close_all(keep=go_write)  # the child has its own copies now
                try:
                    if self.cgroup is not None:
                        self.cgroup.join(host_pid)  # before the child reads a byte of the IFC
                except OSError as exc:
                    sent.close_all()  # no go: the child ends without reading anything
                    try:
                        zygote.expect("exited", time.monotonic() + STOP_SECONDS)
                    except (TimeoutError, ConversionUnavailable):
                        zygote.stop()
                    output.drain()
                    raise ConversionFailed(f"conversion refused: isolation unavailable: cannot move the conversion into its cgroup ({exc})") from None
                os.write(go_write, GO)
            code = self._finish_child(zygote, host_pid, output)
        if code != 0:
            if self.killed_by_memory_cap(code):
                raise self.memory_error("the ifcopenshell stage")
            raise ConversionFailed(output.error("the ifcopenshell stage", code))

    def _finish_child(self, zygote, host_pid: int, output: StageOutput) -> int:
        try:
            output.relay(self.deadline, self.relay)
            return zygote.expect("exited", self.deadline)["status"]
        except (queue.Empty, TimeoutError):
            self._kill(host_pid)
            try:  # the zygote reports the killed child; if it does not, it is restarted next time
                zygote.expect("exited", time.monotonic() + STOP_SECONDS)
            except (TimeoutError, ConversionUnavailable):
                zygote.stop()
            raise _time_limit(self.timeout_seconds) from None
        except ConversionUnavailable as exc:  # the zygote died under the child
            self._kill(host_pid)
            zygote.stop()
            raise ConversionFailed(str(exc)) from None
        finally:
            output.drain()

    def _kill(self, host_pid: int) -> None:
        try:
            os.kill(host_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.cgroup is not None:
            self.cgroup.kill_all()

    # --- stage 2: node, in its own sandbox -----------------------------------------------------------------------

    def fallback_args(self, ifc_path: Path, passed: Descriptors, xkt: str) -> tuple[list[str], bool]:
        """The converter's arguments for the web-ifc fallback, and that node optimizes (it parses the whole IFC)."""
        source = f"/proc/self/fd/{passed.add(open_read(ifc_path))}"
        raw_metadata = f"/proc/self/fd/{passed.add(self.create(RAW_FALLBACK_METADATA))}"
        return ["--source", source, "--output", xkt, "--metadata-out", raw_metadata], True

    def records_args(self, passed: Descriptors, xkt: str) -> tuple[list[str], bool]:
        """The converter's arguments for the geometry records, and whether node optimizes (see OPTIMIZE_FROM_BYTES)."""
        records = passed.add(open_read(self.work_dir / GEOMETRY_FILE))
        metadata = passed.add(open_read(self.work_dir / METADATA_FILE))
        args = ["--geometry", f"/proc/self/fd/{records}", "--metadata", f"/proc/self/fd/{metadata}", "--output", xkt]
        return args, os.fstat(records).st_size >= OPTIMIZE_FROM_BYTES

    def node_stage(self, ifc_path: Path, node_bin: str, converter_script: Path, protected: list[Path]) -> None:
        with Descriptors() as passed:
            xkt = f"/proc/self/fd/{passed.add(self.create(XKT_FILE))}"
            args, optimize = self.fallback_args(ifc_path, passed, xkt) if self.fallback is not None else self.records_args(passed, xkt)
            command = node_command(self.limits, node_bin, converter_script, args, protected, optimize=optimize)
            argv, chain_env = bwrap.limited(command, rlimits=self.limits.rlimits(), cgroup=self.cgroup,
                                            seccomp_fd=passed.add(seccomp.program_fd()))
            try:
                stage = ConfinedProcess(argv, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **chain_env}, pass_fds=tuple(passed.fds))
            except OSError as exc:
                raise ConversionFailed(f"cannot start xeokit-convert: {exc.strerror or exc}") from None
        try:
            code = stage.finish(self.deadline, self.relay, self.cgroup)
        except StageTimeout:
            raise _time_limit(self.timeout_seconds) from None
        output = stage.output
        if code == bwrap.CGROUP_JOIN_FAILED:
            raise ConversionFailed("conversion refused: isolation unavailable: xeokit-convert could not join the conversion's cgroup")
        if code != 0:
            if self.killed_by_memory_cap(code):
                raise self.memory_error("xeokit-convert")
            raise ConversionFailed(output.error("xeokit-convert", code))


def run_pipeline(
    ifc_path: Path,
    out_dir: Path,
    *,
    node_bin: str,
    converter_script: Path,
    timeout_seconds: float,
    on_progress: Callable[[str, int], None],
    limits: ConversionLimits = ConversionLimits(),
    protected: list[Path] = (),
) -> PipelineResult:
    """Converts ifc_path into out_dir (model.xkt, metadata.json; element-values.json, element-bounds.json,
    clash-geometry.bin and georeference.json unless the fallback ran).
    `protected`: paths the conversion must never see (configuration file, data directory)."""
    conversion = _Conversion(out_dir, limits, time.monotonic() + timeout_seconds, timeout_seconds, on_progress)
    try:
        conversion.cgroup = limits.run_cgroup()
    except IsolationUnavailable as exc:
        return PipelineResult(False, f"conversion refused: {exc}")
    try:
        conversion.ifcopenshell_stage(ifc_path)
        if conversion.fallback is not None:
            on_progress("fallback", 10)
            for name in STAGE_OUTPUTS:
                (out_dir / name).unlink(missing_ok=True)
        else:
            georeference = out_dir / GEOREFERENCE_FILE
            if georeference.stat().st_size == 0:  # the stage could not read the placement (pipeline.write_georeference)
                georeference.unlink()
            on_progress("xkt", 85)
        conversion.node_stage(ifc_path, node_bin, converter_script, list(protected))
        if conversion.fallback is not None:
            raw = out_dir / RAW_FALLBACK_METADATA
            with open(out_dir / METADATA_FILE, "w", encoding="utf-8") as handle:
                json.dump(normalise_fallback_metadata(json.loads(raw.read_text(encoding="utf-8"))), handle, ensure_ascii=False, separators=(",", ":"))
            raw.unlink()
        else:
            (out_dir / GEOMETRY_FILE).unlink()
    except (ConversionFailed, ConversionUnavailable) as exc:
        return PipelineResult(False, str(exc)[-ERROR_TAIL_BYTES:])
    finally:
        if conversion.cgroup is not None:
            conversion.cgroup.remove()
    on_progress("done", 100)
    missing = [p.name for p in (out_dir / XKT_FILE, out_dir / METADATA_FILE) if not p.is_file()]
    if missing:
        return PipelineResult(False, f"conversion produced no {', '.join(missing)}")
    return PipelineResult(True)


def main(argv=None) -> int:
    """Standalone conversions (operators, benchmarks) in one process, so the zygote is warm after the first:
    python -m models_app.conversion.runner --ifc F --out DIR [--ifc F2 --out DIR2 ...]
    python -m models_app.conversion.runner --serve   (one "IFC<TAB>OUT" per stdin line; JSON events on stdout)"""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--ifc", type=Path, action="append", default=[])
    parser.add_argument("--out", type=Path, action="append", default=[])
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("--node", default="node")
    parser.add_argument("--converter", type=Path, default=SHIPPED_CONVERTER)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--memory-mb", type=int, default=ConversionLimits.memory_mb)
    parser.add_argument("--allow-no-cgroup", action="store_true")
    args = parser.parse_args(argv)
    limits = ConversionLimits(memory_mb=args.memory_mb, allow_no_cgroup=args.allow_no_cgroup)
    started = time.monotonic()
    zygote_for(limits).start()

    def event(**fields) -> None:
        if args.serve:
            print(json.dumps(fields), flush=True)

    event(ready=round(time.monotonic() - started, 3))
    jobs = (line.rstrip("\n").split("\t") for line in sys.stdin) if args.serve else zip(args.ifc, args.out)
    failures = 0
    for ifc, out in jobs:
        ifc, out = Path(ifc).resolve(), Path(out).resolve()
        out.mkdir(parents=True, exist_ok=True)
        for name in (XKT_FILE, *STAGE_OUTPUTS, RAW_FALLBACK_METADATA):
            (out / name).unlink(missing_ok=True)  # the outputs are created exclusively
        started = time.monotonic()

        def progress(phase: str, percent: int) -> None:
            if args.serve:
                event(phase=phase, percent=percent, seconds=round(time.monotonic() - started, 3))  # noqa: B023 - used during this conversion only
            else:
                print(f"{phase} {percent}%", flush=True)

        result = run_pipeline(ifc, out, node_bin=args.node, converter_script=args.converter.resolve(),
                              timeout_seconds=args.timeout, limits=limits, on_progress=progress)
        event(end=str(ifc), ok=result.ok, error=result.error, seconds=round(time.monotonic() - started, 3))
        if not result.ok:
            failures += 1
            print(result.error, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
