"""The conversion runner says why a converter failed, and its stages end with the worker that started them."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest

from models_app.conversion import runner
from tests.helpers import MINIMAL_IFC, sample
from tests.processes import spawn, stop
from viewer_gateway.config import SHIPPED_CONVERTER as CONVERTER



def convert(tmp_path, **overrides):
    ifc = tmp_path / "model.ifc"
    ifc.write_bytes(MINIMAL_IFC)
    out = tmp_path / "out"
    out.mkdir()
    options = {"node_bin": "node", "converter_script": CONVERTER, "timeout_seconds": 120, "on_progress": lambda *_: None, **overrides}
    return runner.run_pipeline(ifc, out, **options)


def test_the_minimal_ifc_converts(tmp_path):
    result = convert(tmp_path)
    assert result.ok, result.error


def test_a_missing_node_binary_names_the_setting(tmp_path):
    result = convert(tmp_path, node_bin=str(tmp_path / "no-node"))
    assert not result.ok
    assert "nodeBin" in result.error and "no-node" in result.error and "Broken pipe" not in result.error


def test_a_missing_converter_script_says_what_node_said(tmp_path):
    result = convert(tmp_path, converter_script=tmp_path / "missing.js")
    assert not result.ok
    assert "Cannot find module" in result.error and "Broken pipe" not in result.error


def test_a_converter_dying_at_start_reports_its_stderr(tmp_path):
    dying = tmp_path / "dying.js"
    dying.write_text('process.stderr.write("xeokit-convert: out of licences\\n"); process.exit(3);\n')
    result = convert(tmp_path, converter_script=dying)
    assert not result.ok
    assert "out of licences" in result.error and "Broken pipe" not in result.error


def test_stages_end_when_the_worker_dies(tmp_path):
    """A worker killed mid-conversion leaves no stage running (no preexec_fn needed)."""
    out = tmp_path / "out"
    out.mkdir()
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from models_app.conversion import runner
        runner.run_pipeline(Path({str(sample("duplex.ifc"))!r}), Path({str(out)!r}), node_bin="node",
                            converter_script=Path({str(CONVERTER)!r}), timeout_seconds=600, on_progress=lambda *_: None)
    """)
    worker = spawn([sys.executable, "-c", script], cwd=runner.PROJECT_ROOT, env={**os.environ, "PYTHONPATH": str(runner.PROJECT_ROOT)})
    try:
        deadline = time.monotonic() + 60
        stages = []
        while time.monotonic() < deadline and not stages:
            stages = psutil.Process(worker.pid).children(recursive=True)
            time.sleep(0.02)
        assert stages, "the ifcopenshell stage should be running"
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
        gone, alive = psutil.wait_procs(stages, timeout=10)
        assert alive == [], [p.cmdline() for p in alive]
        assert not (out / "model.xkt").exists(), "nothing should have gone on converting for the dead worker"
    finally:
        stop(worker)


def test_the_converter_does_nothing_for_a_parent_that_is_gone(tmp_path):
    """node is told its worker's pid: when that process is no longer its parent, it ends without converting."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    ifc = tmp_path / "model.ifc"
    ifc.write_bytes(MINIMAL_IFC)
    output = tmp_path / "model.xkt"
    finished = subprocess.run(
        ["node", str(CONVERTER), "--parent-pid", str(gone.pid), "--source", str(ifc), "--output", str(output)],
        capture_output=True, timeout=60,
    )
    assert finished.returncode == 1
    assert not output.exists()
    converted = subprocess.run(
        ["node", str(CONVERTER), "--parent-pid", str(os.getpid()), "--empty", "--output", str(output)],
        capture_output=True, timeout=60,
    )
    assert converted.returncode == 0, converted.stderr
    assert output.stat().st_size > 0


def test_a_converter_flooding_its_output_is_stopped_at_the_time_limit_with_bounded_memory(tmp_path):
    """web-ifc prints a line for every token it cannot parse, endlessly on some files: the time limit ends it, its
    stderr is kept as a short tail only and the runner's memory stays flat."""
    flooding = tmp_path / "flooding.js"
    flooding.write_text(
        'const line = "[WEB-IFC][error] unexpected token\\n".repeat(1000);\n'
        'process.stderr.write("stderr-start\\n");\n'
        'const flood = () => process.stdout.write(line, () => process.stderr.write(line, flood));\nflood();\n'
    )
    threads_before = threading.active_count()
    before = psutil.Process().memory_info().rss
    result = convert(tmp_path, converter_script=flooding, timeout_seconds=8)
    grown = psutil.Process().memory_info().rss - before
    assert not result.ok
    assert "time limit" in result.error
    assert grown < 64 * 2**20, f"the runner grew by {grown / 2**20:.0f} MB"
    assert not list((tmp_path / "out").glob("*.log")), "no stderr log should be written into the work folder"
    assert threading.active_count() == threads_before, "the output readers should have ended with the converter"
