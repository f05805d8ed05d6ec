"""Runs the conversion in child processes under one time limit, relaying progress:
1. python -m models_app.conversion.pipeline (ifcopenshell: metadata.json + geometry.glb), then
2. node converter/dist/convert.mjs (xeokit-convert: GLB + metadata -> model.xkt; or the IFC itself as the fallback).
The stages run strictly one after the other, so their memory peaks never add up; the converter is a single bundled
file that loads in ~0.2 s.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from models_app.conversion.metadata import normalise_fallback_metadata
from models_app.conversion.pipeline import FALLBACK_FILE, GLB_FILE, METADATA_FILE, write_json
from viewer_gateway.config import SHIPPED_CONVERTER

ERROR_TAIL_BYTES = 2048
PIPE_READ_BYTES = 65536  # longest stdout line relayed, and stderr read size
PROJECT_ROOT = Path(__file__).resolve().parents[2]
XKT_FILE = "model.xkt"


class ConversionFailed(Exception):
    pass


@dataclass
class PipelineResult:
    ok: bool
    error: str = ""


def _pump(stream, lines: queue.Queue) -> None:
    # bounded lines and a bounded queue: a child that floods stdout (web-ifc logs every token it cannot parse) is
    # slowed down by the full pipe instead of filling the worker's memory
    while line := stream.readline(PIPE_READ_BYTES):
        lines.put(line)
    lines.put(None)  # end of output: the process is exiting


def _keep_tail(stream, tail: bytearray) -> None:
    """Reads stderr to its end, keeping only its last bytes (for the error message), so nothing grows on disk."""
    while chunk := stream.read1(PIPE_READ_BYTES):
        tail += chunk
        del tail[:-ERROR_TAIL_BYTES]


class _Child:
    """One stage in its own process group (the time limit kills the whole group), stdout lines relayed."""

    def __init__(self, command: list[str], name: str, setting: str = ""):
        self.name = name
        # no preexec_fn (unsafe in a threaded worker): each stage ends itself when its parent dies (the pipeline with
        # PR_SET_PDEATHSIG, the converter by watching its parent pid)
        try:
            self.process = subprocess.Popen(
                command,
                cwd=PROJECT_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            where = f" (configuration key {setting})" if setting else ""
            raise ConversionFailed(f"cannot start {name}: {command[0]!r}{where}: {exc.strerror or exc}") from None
        self.lines: queue.Queue = queue.Queue(maxsize=1000)
        self.stderr_tail = bytearray()
        self.readers = [
            threading.Thread(target=_pump, args=(self.process.stdout, self.lines), daemon=True),
            threading.Thread(target=_keep_tail, args=(self.process.stderr, self.stderr_tail), daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    def stop(self) -> None:
        """Kills the process group if it still runs, then lets both readers reach the end of their pipes."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
        while self.readers[0].is_alive():  # a full queue would keep the stdout reader from reaching the end
            try:
                self.lines.get(timeout=0.1)
            except queue.Empty:
                pass
        for reader in self.readers:
            reader.join(timeout=5)

    def finish(self, deadline: float, on_line: Callable[[str], None], timeout_seconds: float) -> None:
        try:
            while (line := self.lines.get(timeout=max(0.0, deadline - time.monotonic()))) is not None:
                on_line(line)
            self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except (queue.Empty, subprocess.TimeoutExpired):
            raise ConversionFailed(f"conversion exceeded the time limit of {timeout_seconds:g} s and was stopped") from None
        self.stop()
        code = self.process.returncode
        if code != 0:
            tail = self.stderr_tail.decode("utf-8", "replace").strip() or f"{self.name} exited with code {code}"
            if code < 0:
                tail += f"\n({self.name} killed by signal {-code})"
            raise ConversionFailed(tail[-ERROR_TAIL_BYTES:])


def run_pipeline(
    ifc_path: Path,
    out_dir: Path,
    *,
    node_bin: str,
    converter_script: Path,
    timeout_seconds: float,
    on_progress: Callable[[str, int], None],
) -> PipelineResult:
    deadline = time.monotonic() + timeout_seconds

    def relay(line: str) -> None:
        try:
            progress = json.loads(line)
            on_progress(progress["phase"], progress["percent"])
        except (ValueError, KeyError, TypeError):
            pass

    def run_stage(command: list[str], name: str, setting: str = "") -> None:
        stage = _Child(command, name, setting)
        try:
            stage.finish(deadline, relay, timeout_seconds)
        finally:
            stage.stop()

    try:
        run_stage([sys.executable, "-m", "models_app.conversion.pipeline", "--ifc", str(ifc_path), "--out", str(out_dir)], "ifcopenshell")
        metadata, xkt, raw = out_dir / METADATA_FILE, out_dir / XKT_FILE, out_dir / "fallback-metadata.json"
        fallback = (out_dir / FALLBACK_FILE).exists()
        if fallback:
            on_progress("fallback", 10)
            converter_args = ["--source", str(ifc_path), "--output", str(xkt), "--metadata-out", str(raw)]
        elif (out_dir / GLB_FILE).exists():
            on_progress("xkt", 88)
            converter_args = ["--source", str(out_dir / GLB_FILE), "--metadata", str(metadata), "--output", str(xkt)]
        else:
            on_progress("xkt", 88)
            converter_args = ["--empty", "--metadata", str(metadata), "--output", str(xkt)]
        run_stage([node_bin, "--optimize-for-size", str(converter_script), "--parent-pid", str(os.getpid()), *converter_args], "xeokit-convert", "nodeBin")
        if fallback:
            write_json(metadata, normalise_fallback_metadata(json.loads(raw.read_text(encoding="utf-8"))))
    except ConversionFailed as exc:
        return PipelineResult(False, str(exc))
    on_progress("done", 100)
    missing = [p.name for p in (out_dir / XKT_FILE, out_dir / METADATA_FILE) if not p.is_file()]
    if missing:
        return PipelineResult(False, f"conversion produced no {', '.join(missing)}")
    return PipelineResult(True)


def main(argv=None) -> int:
    """Standalone conversion (operators, benchmarks): python -m models_app.conversion.runner --ifc F --out DIR"""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--ifc", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--node", default="node")
    parser.add_argument("--converter", type=Path, default=SHIPPED_CONVERTER)
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    result = run_pipeline(
        args.ifc.resolve(), args.out.resolve(), node_bin=args.node, converter_script=args.converter.resolve(),
        timeout_seconds=args.timeout, on_progress=lambda phase, percent: print(f"{phase} {percent}%", flush=True),
    )
    if not result.ok:
        print(result.error, file=sys.stderr)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
