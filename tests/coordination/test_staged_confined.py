"""A staged run (the agent's run on a working product that no conversion has seen) parses and meshes that IFC only
inside the clash run's confined child: while it meshes, the one process of the run is the run child, in a network
namespace of its own (bubblewrap), no unconfined meshing process exists; cancel still stops it. The staged product's
elements are selected and described from that IFC (it may hold elements no conversion has seen)."""

from __future__ import annotations

import os
import threading

import psutil
import pytest

from models_app.storage import model_dir
from tests.accounts.people import post
from tests.coordination.clash_helpers import BEAM, DUCT, DUCT_2, box, run_queued, write_boxes_ifc
from tests.coordination.test_runs import cancel_promptly, run_of, runs_url, start, tower  # noqa: F401 - the fixture
from tests.helpers import ok, poll

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def run_processes() -> list[psutil.Process]:
    """This test process's descendants that run Python modules of a clash run (the run child, a meshing child)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if any("run_child" in part or "clash_meshing" in part for part in child.cmdline()):
                found.append(child)
        except psutil.Error:
            continue
    return found


def test_a_staged_products_ifc_is_meshed_only_in_the_sandboxed_run_child(api, tower):  # noqa: F811 - the fixture
    project, _, services = tower
    ducts = {f"0dct{index:018d}": box("IfcDuctSegment", f"Duct {index}", (index * 0.5, -1, 3.1), (0.2, 6, 0.3)) for index in range(800)}
    write_boxes_ifc(model_dir(services.id) / "model.ifc", ducts)  # the staged product, never converted
    run_id = start(api, project, staged=True)
    worker = threading.Thread(target=run_queued)
    worker.start()
    child = None
    try:
        # the run child is held still while it is looked at (unloaded, it meshes this product in well under a second,
        # faster than the run's progress is written)
        child = poll(lambda: next((p for p in run_processes() if "coordination_app.run_child" in p.cmdline()
                                   and os.path.basename(p.cmdline()[0]).startswith("python")), None), bool, timeout=60, interval=0.005)
        child.suspend()
        assert [p for p in run_processes() if any("clash_meshing" in part for part in p.cmdline())] == []
        assert os.readlink(f"/proc/{child.pid}/ns/net") != os.readlink("/proc/self/ns/net")  # bubblewrap's own network namespace
        root = f"/proc/{child.pid}/root"
        assert os.path.isdir(f"{root}/usr") and not os.path.exists(f"{root}{model_dir(services.id)}")  # its file system lacks the model folder
        child.resume()  # the worker hears of a cancel between the child's heartbeats: cancelled while it starts and meshes
        cancel_promptly(api, project, run_id)
    finally:
        if child is not None and child.is_running():
            child.resume()
        worker.join(60)
    assert run_processes() == []



def test_a_staged_run_selects_and_describes_the_staged_products_elements(api, tower):  # noqa: F811 - the fixture
    """The staged product has an element no conversion has seen (a second duct, on another storey) and lacks one
    (the first duct): the test's class filter picks the new one, its facts come from the staged IFC, and the first
    duct's clash is missing (its element is gone from the product), not merely resolved."""
    project, structure, services = tower
    ok(post(api, f"/api/v1/projects/{project.id}/clash-tests/ducts", {
        "a": {"models": [services.id], "classes": ["IfcFlowSegment"]}, "b": {"models": [structure.id], "classes": ["IfcBeam"]}}, method="put"))
    first = start(api, project)
    run_queued()
    assert run_of(api, project, first)["summary"]["new"] == 1
    write_boxes_ifc(model_dir(services.id) / "model.ifc", {DUCT_2: box("IfcDuctSegment", "Duct D2", (6, -1, 3.1), (0.4, 6, 0.3))}, storey="Level 2")
    staged = start(api, project, staged=True)
    run_queued()
    assert run_of(api, project, staged)["summary"] == {"new": 1, "active": 0, "resolved": 0, "missing": 1, "approved": 0, "total": 1}
    rows = {row["status"]: row for row in ok(api.get(f"{runs_url(project)}/{staged}/clashes"))}
    assert rows["new"]["a"] == {"modelId": services.id, "guid": DUCT_2, "type": "IfcDuctSegment", "name": "Duct D2", "storey": "Level 2"}
    assert (rows["missing"]["a"]["guid"], rows["new"]["b"]["guid"]) == (DUCT, BEAM)
