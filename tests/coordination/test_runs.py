"""Clash runs as jobs: taken by the clashes queue's own worker loop, re-run automatically when a model of an automatic
test gets a new ready version (an uploaded revision, converted for real), cancelled at once while queued and by
their worker while running, recovered when their worker dies, and run on the staged product without changing any
clash's status. The models are small IFCs of boxes converted for real; the engine is the real one."""

from __future__ import annotations

import socket
import threading
import time

import psutil
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django_tasks_db.management.commands.db_worker import Worker

from coordination_app.jobs import CLASH_RUN, MAX_ATTEMPTS
from coordination_app.models import Clash, ClashRun, ClashSighting
from coordination_app.services.runs import runs_root
from core import jobs
from core.jobs.tasks import CLASH_QUEUE
from models_app import services as model_services
from models_app.models import Project
from models_app.storage import model_dir
from tests.accounts.people import post
from tests.coordination.clash_helpers import BEAM, DUCT, box, converted_model, run_queued, write_boxes_ifc
from tests.helpers import ok, poll

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

BEAMS = {BEAM: box("IfcBeam", "Beam B1", (0, 0, 3), (10, 0.3, 0.5))}
CROSSING = {DUCT: box("IfcDuctSegment", "Duct D1", (2, -1, 3.1), (0.4, 6, 0.3))}
LOWERED = {DUCT: box("IfcDuctSegment", "Duct D1", (2, -1, 1.0), (0.4, 6, 0.3))}


@pytest.fixture
def tower(api):
    """A project with a converted structure model (a beam) and services model (a duct crossing it), and a test."""
    project = Project.objects.create(title="Tower", kind=Project.Kind.IFC)
    structure = converted_model(project, BEAMS, "structure.ifc")
    services = converted_model(project, CROSSING, "services.ifc")
    ok(post(api, f"/api/v1/projects/{project.id}/clash-tests/ducts", {"a": {"models": [services.id]}, "b": {"models": [structure.id]}}, method="put"))
    return project, structure, services


def cancel_promptly(api, project, run_id: str) -> None:
    """Cancels a running run through the API; it must read cancelled within a second of the request."""
    asked = time.monotonic()
    ok(post(api, f"{runs_url(project)}/{run_id}/cancel", {}))
    poll(lambda: ClashRun.objects.values_list("status", flat=True).get(pk=run_id), lambda status: status == "cancelled", timeout=10, interval=0.02)
    assert time.monotonic() - asked < 1.0


def runs_url(project) -> str:
    return f"/api/v1/projects/{project.id}/clash-tests/ducts/runs"


def start(api, project, **body) -> str:
    return ok(post(api, runs_url(project), body))["runId"]


def run_of(api, project, run_id: str) -> dict:
    return ok(api.get(f"{runs_url(project)}/{run_id}"))


def work_off_the_queue() -> None:
    """The clash worker's own loop (django-tasks' db_worker on the clashes queue) until the queue is empty."""
    Worker(queue_names=[CLASH_QUEUE], interval=0, batch=True, backend_name="default", startup_delay=False, max_tasks=None,
           worker_id="test-clash-worker", excluded_queue_names=[]).run()


def dead_identity() -> str:
    dead = psutil.Popen(["true"])
    dead.wait()
    return f"{socket.gethostname()}:{dead.pid}:{int(time.time()) - 5}"


def test_a_run_is_taken_by_the_clash_queue_and_answers_its_progress_and_summary(api, tower):
    project, structure, services = tower
    run_id = start(api, project)
    assert [args for args in jobs.waiting_args(CLASH_RUN)] == [[run_id]]
    work_off_the_queue()
    run = run_of(api, project, run_id)
    assert (run["status"], run["progress"], run["error"], run["trigger"], run["staged"]) == ("done", {"phase": "done", "percent": 100}, "", "user", False)
    assert run["summary"] == {"new": 1, "active": 0, "resolved": 0, "missing": 0, "approved": 0, "total": 1}
    assert run["startedAt"] and run["finishedAt"] and jobs.waiting_args(CLASH_RUN) == []
    tests = ok(api.get(f"/api/v1/projects/{project.id}/clash-tests"))
    assert [(t["name"], t["lastRun"]["runId"], t["lastRun"]["summary"]["total"]) for t in tests] == [("ducts", run_id, 1)]
    assert [r["runId"] for r in ok(api.get(runs_url(project)))] == [run_id]
    assert not runs_root().joinpath(run_id).exists()


def test_an_automatic_test_runs_again_when_a_new_revision_is_ready(api, tower):
    project, structure, services = tower
    ok(post(api, f"/api/v1/projects/{project.id}/clash-tests/manual",
            {"a": {"models": [services.id]}, "b": {"models": [structure.id]}}, method="put"))  # not automatic: never run by itself
    body = ok(api.get(f"/api/v1/projects/{project.id}/clash-tests/ducts"))
    ok(post(api, f"/api/v1/projects/{project.id}/clash-tests/ducts", {**body, "automatic": True}, method="put"))
    first = start(api, project)
    run_queued()

    lowered = write_boxes_ifc(model_dir(services.id) / ".next.ifc", LOWERED).read_bytes()
    revision = api.post(f"/api/v1/models/{services.id}/revisions", {"file": SimpleUploadedFile("services-week2.ifc", lowered)}, format="multipart")
    assert revision.json()["code"] == 0, revision.json()
    assert not ClashRun.objects.exclude(pk=first).exists()  # nothing runs before the revision is ready
    model_services.run_conversion(services.id)
    automatic = ClashRun.objects.exclude(pk=first).get()
    assert (automatic.test.name, automatic.trigger, automatic.status) == ("ducts", "automatic", "queued")
    run_queued()
    run = run_of(api, project, automatic.id)
    assert {m["modelId"]: m["version"] for m in run["models"]} == {services.id: "v2", structure.id: "v1"}
    assert run["summary"] == {"new": 0, "active": 0, "resolved": 1, "missing": 0, "approved": 0, "total": 0}


def test_cancel_a_queued_run_at_once_and_a_running_one_through_its_worker(api, tower):
    project, _, _ = tower
    queued = start(api, project)
    cancelled = ok(post(api, f"{runs_url(project)}/{queued}/cancel", {}))
    assert (cancelled["runId"], cancelled["status"]) == (queued, "cancelled")
    work_off_the_queue()  # its task finds nothing to run
    assert run_of(api, project, queued)["status"] == "cancelled" and not ClashSighting.objects.exists()

    running = start(api, project)
    claimed = jobs.claim(CLASH_RUN, ClashRun.objects.filter(pk=running))
    assert ok(post(api, f"{runs_url(project)}/{running}/cancel", {}))["status"] == "running"  # asked; the worker stops it
    jobs.run(CLASH_RUN, claimed)
    run = run_of(api, project, running)
    assert (run["status"], run["summary"]) == ("cancelled", None)
    assert not Clash.objects.exists() and not ClashSighting.objects.exists()
    assert ok(post(api, f"{runs_url(project)}/{running}/cancel", {}))["status"] == "cancelled"  # an ended run stays as it is


def test_a_run_whose_worker_keeps_dying_is_queued_again_then_fails(api, tower):
    project, _, _ = tower
    run_id = start(api, project)
    rows = ClashRun.objects.filter(pk=run_id)
    kind = jobs.kind_named(CLASH_RUN)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        assert jobs.claim(kind, rows).attempts == attempt
        rows.update(worker=dead_identity())
        (runs_root() / run_id).mkdir(parents=True, exist_ok=True)  # what it was meshing
        recovered = jobs.recover(kind)
        assert not (runs_root() / run_id).exists()
        assert recovered == ([run_id] if attempt < MAX_ATTEMPTS else [])
    run = run_of(api, project, run_id)
    assert (run["status"], run["error"]) == ("failed", f"the clash worker died {MAX_ATTEMPTS} times while running this run")


def test_a_staged_run_compares_but_changes_no_clash(api, tower):
    project, _, services = tower
    first = start(api, project)
    run_queued()
    write_boxes_ifc(model_dir(services.id) / "model.ifc", LOWERED)  # the agent's staged change, not converted
    staged = start(api, project, staged=True)
    run_queued()
    run = run_of(api, project, staged)
    assert run["staged"] and {m["version"] for m in run["models"]} == {"staged"}
    assert run["summary"] == {"new": 0, "active": 0, "resolved": 1, "missing": 0, "approved": 0, "total": 0}
    clash = Clash.objects.get()
    assert (clash.status, clash.last_run_id) == ("new", first)
    again = start(api, project)  # compared with the first run, not the staged one: the clash is still there
    run_queued()
    assert run_of(api, project, again)["summary"] == {"new": 0, "active": 1, "resolved": 0, "missing": 0, "approved": 0, "total": 1}


def test_a_running_run_stops_within_a_second_of_its_cancel(api, tower):
    """A staged run meshing a bigger product (800 ducts) is cancelled mid-way: the worker's poll stops the meshing."""
    project, _, services = tower
    ducts = {f"0dct{index:018d}": box("IfcDuctSegment", f"Duct {index}", (index * 0.5, -1, 3.1), (0.2, 6, 0.3)) for index in range(800)}
    write_boxes_ifc(model_dir(services.id) / "model.ifc", ducts)
    run_id = start(api, project, staged=True)
    worker = threading.Thread(target=run_queued)
    worker.start()
    try:
        poll(lambda: ClashRun.objects.values_list("status", flat=True).get(pk=run_id), lambda status: status == "running", timeout=60, interval=0.01)
        cancel_promptly(api, project, run_id)
    finally:
        worker.join(60)
    assert not Clash.objects.exists() and not runs_root().joinpath(run_id).exists()


def test_a_run_over_its_memory_cap_fails_saying_so_and_records_nothing(api, tower, monkeypatch):
    project, _, _ = tower
    monkeypatch.setenv("VIEWER_CLASH_MEMORY_MB", "16")  # the engine's child cannot even load numpy under it
    run_id = start(api, project)
    run_queued()
    run = run_of(api, project, run_id)
    assert run["status"] == "failed" and "memory cap of 16 MB (VIEWER_CLASH_MEMORY_MB)" in run["error"], run["error"]
    assert not Clash.objects.exists() and not runs_root().joinpath(run_id).exists()
