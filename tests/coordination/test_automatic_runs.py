"""Automatic clash runs hear every conversion that ends ready (models_app.signals.model_ready), and run only for a new
saved version: not for the preview of a script run that is not saved, and once per version however many times it
becomes ready. The script's saves are written by the edit service's own version store (edit_service.engine.versions),
its runs publish a new working model.ifc as the edit service does (a new file put in place); the conversions and the
engine are the real ones."""

from __future__ import annotations

import os

import pytest
from django.conf import settings

from coordination_app.models import ClashRun
from edit_service.engine.store import ModelFiles, write_json_atomic
from edit_service.engine.versions import Versions
from models_app.models import Project
from models_app.selectors import model_ready_product_is_saved
from models_app.storage import model_dir
from tests.accounts.people import post
from tests.coordination.clash_helpers import BEAM, DUCT, box, converted_model, reconverted, run_queued, write_boxes_ifc
from tests.helpers import ok

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

BEAMS = {BEAM: box("IfcBeam", "Beam B1", (0, 0, 3), (10, 0.3, 0.5))}
CROSSING = {DUCT: box("IfcDuctSegment", "Duct D1", (2, -1, 3.1), (0.4, 6, 0.3))}
LOWERED = {DUCT: box("IfcDuctSegment", "Duct D1", (2, -1, 1.0), (0.4, 6, 0.3))}


def script_run(model_id: str, boxes: dict) -> None:
    """What the edit service does on a script run: a new working product published over model.ifc (the working
    state recorded), then the gateway's reconversion; nothing is saved."""
    files = ModelFiles(settings.DATA_DIR, model_id).require()
    product = write_boxes_ifc(files.root / ".product.ifc", boxes)
    os.replace(product, files.ifc)
    write_json_atomic(files.working, {"scriptHash": str(hash(repr(boxes)))})
    reconverted(model_id)


def script_save(model_id: str) -> str:
    """What the edit service does on a save of the product already run: a new big version holding model.ifc (a hard
    link), then the gateway's reconversion. Answers the version."""
    files = ModelFiles(settings.DATA_DIR, model_id).require()
    meta = Versions(files).create(script="PARAMS = {}\n", script_hash="h", ifc=files.ifc, snapshot={}, script_map={}, note="")
    reconverted(model_id)
    return meta["version"]


@pytest.fixture
def tower(api):
    """A structure model (a beam) and a script-built services model (a duct crossing it, saved as v1), an automatic
    test between them, run once."""
    project = Project.objects.create(title="Tower", kind=Project.Kind.IFC)
    structure = converted_model(project, BEAMS, "structure.ifc")
    services = converted_model(project, CROSSING, "services.ifc")
    assert script_save(services.id) == "v1"
    ok(post(api, f"/api/v1/projects/{project.id}/clash-tests/ducts",
            {"a": {"models": [services.id]}, "b": {"models": [structure.id]}, "automatic": True}, method="put"))
    first = ok(post(api, f"/api/v1/projects/{project.id}/clash-tests/ducts/runs", {}))["runId"]
    run_queued()
    assert ClashRun.objects.get(pk=first).status == "done"
    return project, structure, services, first


def automatic_runs():
    return list(ClashRun.objects.filter(trigger=ClashRun.Trigger.AUTOMATIC).order_by("created_at"))


def test_a_script_runs_preview_does_not_run_the_test_its_save_does(api, tower):
    project, structure, services, first = tower
    script_run(services.id, LOWERED)
    assert not model_ready_product_is_saved(services.id)
    assert automatic_runs() == []  # the preview converted and became ready, but it is no version

    assert script_save(services.id) == "v2"
    assert model_ready_product_is_saved(services.id)
    [automatic] = automatic_runs()
    run_queued()
    run = ok(api.get(f"/api/v1/projects/{project.id}/clash-tests/ducts/runs/{automatic.id}"))
    assert (run["status"], run["trigger"]) == ("done", "automatic")
    assert run["models"] == [{"modelId": services.id, "version": "v2"}, {"modelId": structure.id, "version": "v1"}]  # what the API shows
    assert run["summary"] == {"new": 0, "active": 0, "resolved": 1, "missing": 0, "approved": 0, "total": 0}


def test_ready_events_of_one_version_queue_one_run(tower):
    _, structure, services, _ = tower
    script_run(services.id, LOWERED)
    script_save(services.id)
    reconverted(services.id)  # the same version ready again while its run waits
    assert len(automatic_runs()) == 1
    run_queued()
    reconverted(services.id)  # and again once it ran: nothing new to see
    reconverted(structure.id)
    assert len(automatic_runs()) == 1
    assert [entry["version"] for entry in automatic_runs()[0].model_versions] == ["v2", "v1"]


def test_a_preview_discarded_back_to_the_saved_version_runs_nothing(tower):
    _, _, services, _ = tower
    files = ModelFiles(settings.DATA_DIR, services.id)
    saved = files.versions_dir / "v1.ifc"
    script_run(services.id, LOWERED)
    os.link(saved, files.root / ".discarded.ifc")  # the edit service's discard: the saved version's IFC back in place
    os.replace(files.root / ".discarded.ifc", files.ifc)
    reconverted(services.id)
    assert model_ready_product_is_saved(services.id) and automatic_runs() == []
    assert model_dir(services.id).joinpath("model.ifc").samefile(saved)


def test_a_run_of_the_current_versions_during_a_preview_takes_the_saved_version(api, tower):
    """The conversion shows the preview (the duct lowered), but the current version is still v1 (crossing): a run
    of the current versions meshes v1's saved IFC in its confined child and records v1, as it saw it."""
    project, structure, services, first = tower
    script_run(services.id, LOWERED)
    run_id = ok(post(api, f"/api/v1/projects/{project.id}/clash-tests/ducts/runs", {}))["runId"]
    run_queued()
    run = ok(api.get(f"/api/v1/projects/{project.id}/clash-tests/ducts/runs/{run_id}"))
    assert (run["status"], run["error"]) == ("done", "")
    assert run["models"] == [{"modelId": services.id, "version": "v1"}, {"modelId": structure.id, "version": "v1"}]
    assert run["summary"] == {"new": 0, "active": 1, "resolved": 0, "missing": 0, "approved": 0, "total": 1}  # v1's clash, not the preview's


def test_a_model_with_only_an_unsaved_preview_has_no_version_to_run(api, tower):
    project, structure, _, _ = tower
    sketch = converted_model(project, CROSSING, "sketch.ifc")
    script_run(sketch.id, LOWERED)  # a script took it over and ran; nothing saved yet
    ok(post(api, f"/api/v1/projects/{project.id}/clash-tests/sketch", {"a": {"models": [sketch.id]}, "b": {"models": [structure.id]}}, method="put"))
    refused = post(api, f"/api/v1/projects/{project.id}/clash-tests/sketch/runs", {}).json()
    assert refused["code"] == 40900 and "unsaved script run and has no saved version" in refused["message"]
    staged = ok(post(api, f"/api/v1/projects/{project.id}/clash-tests/sketch/runs", {"staged": True}))
    assert staged["status"] == "queued"  # the staged product can be tried
