"""The conversion runner says why a converter failed, and its stages end with the worker that started them."""

import os
import signal
import sys
import threading

import psutil
import pytest

from models_app.conversion import runner, sandbox
from sandboxing.limits import PROJECT_ROOT
from tests.helpers import MINIMAL_IFC, poll, sample
from tests.processes import spawn, still_running, stop
from viewer_gateway.config import SHIPPED_CONVERTER as CONVERTER

pytestmark = pytest.mark.heavy


def convert(tmp_path, ifc_bytes=MINIMAL_IFC, **overrides):
    ifc = tmp_path / "model.ifc"
    ifc.write_bytes(ifc_bytes)
    out = tmp_path / "out"
    out.mkdir()
    options = {"node_bin": "node", "converter_script": CONVERTER, "timeout_seconds": 120, "on_progress": lambda *_: None, **overrides}
    return runner.run_pipeline(ifc, out, **options)


def test_the_minimal_ifc_converts(tmp_path):
    result = convert(tmp_path)
    assert result.ok, result.error


def test_an_ifc4x3_release_candidate_is_read_as_the_final_release_and_logged(tmp_path, caplog):
    candidate = MINIMAL_IFC.replace(b"FILE_SCHEMA(('IFC4'))", b"FILE_SCHEMA(('ifc4x3_rc3'))")
    with caplog.at_level("INFO", logger=runner.__name__):
        result = convert(tmp_path, candidate)
    assert result.ok, result.error
    assert (tmp_path / "out" / "element-values.json").exists()  # ifcopenshell read it: the web-ifc fallback writes none
    assert "IFC4X3_RC3 (a release candidate) read as its final release IFC4X3_ADD2" in caplog.text
    assert (tmp_path / "model.ifc").read_bytes() == candidate


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


WORKER = """
import sys
from pathlib import Path
from models_app.conversion import runner, sandbox
runner.run_pipeline(Path(sys.argv[1]), Path(sys.argv[2]), node_bin="node", converter_script=Path(sys.argv[3]),
                    timeout_seconds=600, on_progress=lambda *_: None)
"""


def _described(process: psutil.Process, descendants: list[psutil.Process]) -> dict:
    """What is known of a process that outlived its worker: its place among the worker's descendants when the worker
    was killed, its parent now, its state and its command line."""
    try:
        return {"pid": process.pid, "was": [p.pid for p in descendants].index(process.pid), "of": [p.pid for p in descendants],
                "ppid_now": process.ppid(), "status": process.status(), "cmdline": process.cmdline()[:12]}
    except psutil.Error as error:
        return {"pid": process.pid, "error": repr(error)}


def _kill_worker_when(tmp_path, ifc, converter, running) -> None:
    """Starts a worker converting `ifc`, kills it (SIGKILL) once `running(descendants)` is true, then checks every
    process it had started ends and nothing was converted for the dead worker."""
    out = tmp_path / "out"
    out.mkdir()
    worker = spawn([sys.executable, "-c", WORKER, str(ifc), str(out), str(converter)], cwd=PROJECT_ROOT,
                   env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    try:
        def descendants_of_worker():
            try:
                return psutil.Process(worker.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                raise AssertionError("the worker ended before its stage ran") from None

        descendants = poll(descendants_of_worker, running, timeout=60, interval=0.02)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
        # a killed sandbox's bubblewrap was seen still tearing its namespaces down after 10 s at a load of 5-7
        alive = still_running(descendants, timeout=60)
        assert alive == [], [_described(process, descendants) for process in alive]
        assert not (out / "model.xkt").exists() or (out / "model.xkt").stat().st_size == 0
    finally:
        stop(worker)


def _cmdlines(processes) -> list[str]:
    found = []
    for process in processes:
        try:
            found.append(" ".join(process.cmdline()))
        except psutil.Error:
            pass
    return found


def test_the_ifcopenshell_stage_ends_when_the_worker_dies(tmp_path):
    """Killed mid-conversion, a worker leaves no zygote and no forked conversion running (no preexec_fn needed)."""
    def forked_child_running(descendants):
        return sum("models_app.conversion.zygote" in line and "bwrap" not in line for line in _cmdlines(descendants)) >= 2

    _kill_worker_when(tmp_path, sample("duplex.ifc"), CONVERTER, forked_child_running)


def test_the_converter_ends_when_the_worker_dies(tmp_path):
    slow = tmp_path / "slow.js"
    slow.write_text("setTimeout(() => {}, 600000);\n")
    ifc = tmp_path / "model.ifc"
    ifc.write_bytes(MINIMAL_IFC)
    node = str(sandbox.node_executable("node"))
    # node itself: a child forked on its way into the sandbox's chain still shows the worker's command line (slow.js
    # included), and a worker killed then left that chain running before the chain guarded against it (bwrap.py)
    _kill_worker_when(tmp_path, ifc, slow, lambda descendants: any(line.startswith(node) and str(slow) in line for line in _cmdlines(descendants)))


def test_a_converter_flooding_its_output_is_stopped_at_the_time_limit_with_bounded_memory(tmp_path):
    """web-ifc prints a line for every token it cannot parse, endlessly on some files: the time limit ends it, its
    stderr is kept as a short tail only and the runner's memory stays flat."""
    flooding = tmp_path / "flooding.js"
    flooding.write_text(
        'const line = "[WEB-IFC][error] unexpected token\\n".repeat(1000);\n'
        'process.stderr.write("stderr-start\\n");\n'
        'const flood = () => process.stdout.write(line, () => process.stderr.write(line, flood));\nflood();\n'
    )
    zygote = sandbox.zygote_for(sandbox.ConversionLimits())
    if not zygote.alive:
        zygote.start()
    threads_before = threading.active_count()  # the zygote's stderr reader lives as long as the zygote
    before = psutil.Process().memory_info().rss
    result = convert(tmp_path, converter_script=flooding, timeout_seconds=8)
    grown = psutil.Process().memory_info().rss - before
    assert not result.ok
    assert "time limit" in result.error
    assert grown < 64 * 2**20, f"the runner grew by {grown / 2**20:.0f} MB"
    assert not list((tmp_path / "out").glob("*.log")), "no stderr log should be written into the work folder"
    assert threading.active_count() == threads_before, "the output readers should have ended with the converter"
