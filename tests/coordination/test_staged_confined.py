"""A staged run (the agent's run on a working product that no conversion has seen) parses and meshes that IFC only
inside the clash run's confined child: while it meshes, the one process of the run is the run child, in a network
namespace of its own (bubblewrap), no unconfined meshing process exists; cancel still stops it."""

from __future__ import annotations

import os
import threading
import time

import psutil
import pytest

from coordination_app.models import ClashRun
from models_app.storage import model_dir
from tests.accounts.people import post
from tests.coordination.clash_helpers import box, run_queued, write_boxes_ifc
from tests.coordination.test_runs import runs_url, start, tower  # noqa: F401 - the fixture
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
    try:
        poll(lambda: ClashRun.objects.values_list("progress_phase", flat=True).get(pk=run_id), lambda phase: phase == "meshing", timeout=60, interval=0.01)
        processes = poll(run_processes, bool, timeout=10, interval=0.01)
        assert [p for p in processes if any("clash_meshing" in part for part in p.cmdline())] == []
        child = next(p for p in processes if "coordination_app.run_child" in p.cmdline() and os.path.basename(p.cmdline()[0]) != "bwrap")
        assert os.readlink(f"/proc/{child.pid}/ns/net") != os.readlink("/proc/self/ns/net")  # bubblewrap's own network namespace
        root = f"/proc/{child.pid}/root"
        assert os.path.isdir(f"{root}/usr") and not os.path.exists(f"{root}{model_dir(services.id)}")  # its file system lacks the model folder
        asked = time.monotonic()
        ok(post(api, f"{runs_url(project)}/{run_id}/cancel", {}))
        poll(lambda: ClashRun.objects.values_list("status", flat=True).get(pk=run_id), lambda status: status == "cancelled", timeout=10, interval=0.02)
        assert time.monotonic() - asked < 1.0
    finally:
        worker.join(60)
    assert run_processes() == []

