"""Runs the conversion pipeline in a child process with a time limit, relaying its progress."""

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

from models_app.conversion.pipeline import die_with_parent

ERROR_TAIL_BYTES = 2048
PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class PipelineResult:
    ok: bool
    error: str = ""


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)


def _tail(path: Path) -> str:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - ERROR_TAIL_BYTES))
        return handle.read().decode("utf-8", "replace").strip()


def run_pipeline(
    ifc_path: Path,
    out_dir: Path,
    *,
    node_bin: str,
    converter_script: Path,
    timeout_seconds: float,
    on_progress: Callable[[str, int], None],
) -> PipelineResult:
    command = [
        sys.executable, "-m", "models_app.conversion.pipeline",
        "--ifc", str(ifc_path), "--out", str(out_dir),
        "--node", node_bin, "--converter", str(converter_script),
    ]
    with open(out_dir / "stderr.log", "w+b") as stderr:
        process = subprocess.Popen(
            command,
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,  # own process group: the time limit kills node too
            preexec_fn=die_with_parent,
        )
        lines: queue.Queue = queue.Queue()
        reader = threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True)
        reader.start()
        deadline = time.monotonic() + timeout_seconds
        timed_out = False
        while True:
            try:
                line = lines.get(timeout=0.25)
            except queue.Empty:
                if process.poll() is not None and not reader.is_alive():
                    break
                if time.monotonic() > deadline:
                    timed_out = True
                    _kill_group(process)
                    break
                continue
            try:
                progress = json.loads(line)
                on_progress(progress["phase"], progress["percent"])
            except (ValueError, KeyError, TypeError):
                pass
        process.wait()
        reader.join(timeout=5)
        if timed_out:
            return PipelineResult(False, f"conversion exceeded the time limit of {timeout_seconds:g} s and was stopped")
        if process.returncode != 0:
            tail = _tail(out_dir / "stderr.log") or f"conversion process exited with code {process.returncode}"
            if process.returncode < 0:
                tail += f"\n(conversion process killed by signal {-process.returncode})"
            return PipelineResult(False, tail[-ERROR_TAIL_BYTES:])
        missing = [name for name in ("model.xkt", "metadata.json") if not (out_dir / name).is_file()]
        if missing:
            return PipelineResult(False, f"conversion produced no {', '.join(missing)}")
        return PipelineResult(True)
