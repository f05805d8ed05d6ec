"""The conversion runner says why a converter failed, and its stages end with the worker that started them."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from models_app.conversion import runner
from tests.helpers import MINIMAL_IFC, sample
from tests.processes import spawn, stop

CONVERTER = runner.PROJECT_ROOT / "converter" / "convert.js"


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
    """A worker killed mid-conversion leaves neither ifcopenshell nor node running (no preexec_fn needed)."""
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
        while time.monotonic() < deadline and len(stages) < 2:
            stages = psutil.Process(worker.pid).children(recursive=True)
            time.sleep(0.1)
        assert len(stages) >= 2, "the pipeline and the converter should both be running"
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
        gone, alive = psutil.wait_procs(stages, timeout=10)
        assert alive == [], [p.cmdline() for p in alive]
    finally:
        stop(worker)


def test_the_converter_ends_when_its_parent_dies_even_with_stdin_open(tmp_path):
    """While converting, node's stdin is closed, so only its parent watch can end it: here stdin stays open (the
    test holds the pipe) and the parent is killed."""
    read_end, write_end = os.pipe()
    parent_script = (
        f"import os, subprocess, time; subprocess.Popen(['node', {str(CONVERTER)!r}, '--stdin', '--parent-pid', str(os.getpid())],"
        f" stdin={read_end}, pass_fds=[{read_end}]); time.sleep(600)"
    )
    parent = spawn([sys.executable, "-c", parent_script], pass_fds=[read_end], env=dict(os.environ))
    os.close(read_end)
    try:
        deadline = time.monotonic() + 30
        children = []
        while time.monotonic() < deadline and not children:
            children = psutil.Process(parent.pid).children()
            time.sleep(0.05)
        (node,) = children
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        gone, alive = psutil.wait_procs([node], timeout=5)
        assert alive == [], "node kept running after its parent died"
    finally:
        os.close(write_end)
        stop(parent)
