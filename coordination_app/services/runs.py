"""Use cases of clash runs: request one (a user, the agent, or a model that became ready for an automatic test),
cancel one, and the run itself inside a clash worker (core.jobs does the claim, heartbeat and recovery; kind
"clash_run" on the queue "clashes").

A run takes each model's clash geometry as its last conversion left it (clash-geometry.bin), places it in the
project frame (models_app.federation), selects set A's and set B's elements by class, finds the clashes
(coordination_app.engine, in a confined child process with a memory cap: services.confined; that child also meshes
the IFC of a staged run's working product, or of a model converted before clash geometry existed, so no IFC is
parsed outside its sandbox) and records them with their statuses (services.statuses), all in one transaction at the
end: a cancelled or failed run leaves no clash written.

    >>> run = run_request(test, trigger="agent", by="ana", staged=True)   # queued; a worker runs it
    >>> run_cancel(run)                                                    # queued: cancelled at once
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from coordination_app.engine import elements, selection
from coordination_app.engine.clashes import ElementSet
from coordination_app.engine.errors import Cancelled
from coordination_app.jobs import CLASH_RUN
from coordination_app.models import ClashRun, ClashTest
from coordination_app.services.confined import RunFailed, find_clashes_confined
from coordination_app.services.statuses import record_run
from coordination_app.signals import run_finished
from core import jobs
from core.errors import ApplicationError, Conflict
from models_app.federation import project_placements
from models_app.models import IfcModel
from models_app.public import CLASH_GEOMETRY_FILE, IFC_FILE, file_signature, model_file
from models_app.selectors import (
    model_current_version,
    model_metadata,
    model_ready_product_is_saved,
    model_saved_script_ifc,
    project_of_model,
)

logger = logging.getLogger(__name__)

STOP_POLL_SECONDS = 0.25  # how often a running run reads its row for a cancel (cancel stops it within a second)
STAGED_VERSION = "staged"
ERROR_TAIL_CHARS = 2048
ACTIVE = (ClashRun.Status.QUEUED, ClashRun.Status.RUNNING)


def runs_root() -> Path:
    """Where runs mesh what they must mesh (a staged product, a model converted before clash geometry existed)."""
    return Path(settings.DATA_DIR) / "clash-runs"


def _models_checked(test: ClashTest, staged: bool) -> list[IfcModel]:
    """The test's models, each still in the test's project and (unless staged) ready with a version to run (an unsaved
    script preview needs a saved version beside it); 40900 otherwise."""
    found = {model.id: model for model in IfcModel.objects.filter(pk__in=test.model_ids())}
    checked = []
    for model_id in test.model_ids():
        model = found.get(model_id)
        if model is None:
            raise Conflict(f"model {model_id} of clash test {test.name} no longer exists: change the test")
        if project_of_model(model_id) != test.project_id:
            raise Conflict(f"model {model_id} of clash test {test.name} is no longer in project {test.project_id}: change the test")
        if not staged and model.status != IfcModel.Status.READY:
            raise Conflict(f"model {model_id} is {model.status}, not ready: run the test once it is ready")
        if not staged and not model_ready_product_is_saved(model_id) and model_saved_script_ifc(model_id) is None:
            raise Conflict(f"model {model_id} shows an unsaved script run and has no saved version: save it, or run the test staged")
        checked.append(model)
    return checked


def _product_signature(model: IfcModel) -> str:
    """The signature of the IFC a run of the current versions takes of the model: the converted one, or the saved
    version's while the conversion shows an unsaved preview (see _geometry_source)."""
    if model_ready_product_is_saved(model.id):
        return model.converted_ifc
    saved = model_saved_script_ifc(model.id)
    return file_signature(saved) if saved is not None else ""


def _versions(models: list[IfcModel], staged: bool) -> list[dict]:
    """[{modelId, version, ifc}] the run uses: each model's current version and the signature of that version's IFC
    (kept for the automatic runs' comparison, not answered by the API), or "staged"."""
    if staged:
        return [{"modelId": model.id, "version": STAGED_VERSION, "ifc": None} for model in models]
    return [{"modelId": model.id, "version": model_current_version(model.id), "ifc": _product_signature(model)} for model in models]


def run_request(test: ClashTest, *, trigger: str = ClashRun.Trigger.USER, by: str = "", staged: bool = False) -> ClashRun:
    """Queues a run of the test over its models' current versions (staged: the working product of each model, which
    changes no clash's status). 40900 when a model is not ready or left the project. The row and its task are
    written together."""
    models = _models_checked(test, staged)
    with transaction.atomic():
        run = ClashRun.objects.create(test=test, trigger=trigger, requested_by=by[:150], staged=staged, model_versions=_versions(models, staged))
        jobs.enqueue(CLASH_RUN, run.id)  # same database, same transaction: both or neither
    return run


def run_cancel(run: ClashRun) -> ClashRun:
    """A queued run is cancelled at once; a running one is asked to stop (its worker polls the row and stops within
    a second); an ended run is answered as it is."""
    cancelled_at_once = ClashRun.objects.filter(pk=run.pk, status=ClashRun.Status.QUEUED).update(
        status=ClashRun.Status.CANCELLED, cancel_requested=True, finished_at=timezone.now(), progress_phase="", progress_percent=0)
    if not cancelled_at_once:
        ClashRun.objects.filter(pk=run.pk, status=ClashRun.Status.RUNNING).update(cancel_requested=True)
    run.refresh_from_db()
    return run


def _same_products(run: ClashRun, current: dict[str, dict]) -> bool:
    """The run used exactly these versions and converted IFCs of the test's models."""
    used = {entry["modelId"]: (entry.get("version"), entry.get("ifc")) for entry in run.model_versions}
    return all(used.get(model_id) == (entry["version"], entry["ifc"]) for model_id, entry in current.items())


def _automatic_run_needed(test: ClashTest, current: dict[str, dict]) -> bool:
    """No run of the test's current versions is waiting or made: none queued (a queued run takes the versions current
    when it starts), and the last one started did not use these same products (two ready events of one version,
    a preview discarded back to the saved version)."""
    runs = test.runs.filter(staged=False)
    if runs.filter(status=ClashRun.Status.QUEUED).exists():
        return False
    last = runs.filter(status__in=(ClashRun.Status.RUNNING, ClashRun.Status.DONE)).order_by("-created_at").first()
    return last is None or not _same_products(last, {model_id: current[model_id] for model_id in test.model_ids() if model_id in current})


def queue_automatic_runs(model_id: str) -> list[ClashRun]:
    """The model became ready: every automatic test of its project that names it gets a run (trigger automatic) when
    the ready product is a new saved version (an upload, a new revision, a save, a reconversion that changed the
    IFC). Nothing runs for the preview of a script run that is not saved, nor when a run of the test is queued or
    already used these versions. A test that cannot run now (another of its models is converting) is skipped: its
    run comes when that model is ready."""
    project_id = project_of_model(model_id)
    if project_id is None:
        return []
    if not model_ready_product_is_saved(model_id):
        logger.info("model %s is ready with an unsaved preview: no automatic clash run", model_id)
        return []
    queued = []
    for test in ClashTest.objects.filter(project_id=project_id, automatic=True).order_by("name"):
        if model_id not in test.model_ids():
            continue
        try:
            current = {entry["modelId"]: entry for entry in _versions(_models_checked(test, staged=False), staged=False)}
            if _automatic_run_needed(test, current):
                queued.append(run_request(test, trigger=ClashRun.Trigger.AUTOMATIC, by="automatic"))
        except Conflict as exc:
            logger.info("automatic run of clash test %s skipped: %s", test, exc)
    return queued


# --- the run (inside a clash worker) ---------------------------------------------------------------------------


def _stop_poll(run: ClashRun):
    """should_stop for the engine: True once a cancel was asked or the run's row is gone (its test deleted)."""
    last = 0.0

    def should_stop() -> bool:
        nonlocal last
        now = time.monotonic()
        if now - last < STOP_POLL_SECONDS:
            return False
        last = now
        return not ClashRun.objects.filter(pk=run.pk, cancel_requested=False).exists()

    return should_stop


def _geometry_source(model_id: str, staged: bool) -> tuple[Path | None, Path]:
    """(the model's clash geometry as its conversion left it, or None when an IFC must be meshed by the confined
    child; that IFC). A staged run meshes the working product (model.ifc). A run of the current versions takes the
    conversion's geometry, unless that conversion was of an unsaved script run's preview: then it meshes the saved
    version's IFC (_models_checked answers 40900 when the script saved none), so a run never records a version it did
    not see."""
    working = model_file(model_id, IFC_FILE)
    if staged:
        return None, working
    if not model_ready_product_is_saved(model_id):
        return None, model_saved_script_ifc(model_id)  # there is one: _models_checked said so
    converted = model_file(model_id, CLASH_GEOMETRY_FILE)
    return (converted if converted.is_file() else None), working


def _element_sets(side: dict | None, placements: dict, paths: dict, facts: dict, schemas: dict) -> list | None:
    if side is None:
        return None
    return [ElementSet(model_id=model_id, geometry_path=paths[model_id], matrix=placements[model_id],
                       guids=selection.picked(facts[model_id], schemas[model_id], side)) for model_id in side["models"]]


def _announce(run: ClashRun, staged: bool) -> None:
    """run_finished to the apps that act on results (issues); their failure is logged, never the run's."""
    for receiver, outcome in run_finished.send_robust(sender=ClashRun, run_id=run.id, staged=staged):
        if isinstance(outcome, Exception):
            logger.error("run_finished receiver %s failed for %s: %r", receiver, run.id, outcome)


def _fail(run: ClashRun, message: str) -> None:
    jobs.finish(CLASH_RUN, run, status=ClashRun.Status.FAILED, error=message[-ERROR_TAIL_CHARS:], progress_phase="", progress_percent=0)


def run_claimed(run: ClashRun) -> None:
    """The clash run job's run: loads, places and selects the elements, finds the clashes, records them."""
    on_progress = jobs.progress_writer(CLASH_RUN, run)
    work_dir = runs_root() / run.id
    try:
        if run.cancel_requested:
            jobs.finish(CLASH_RUN, run, status=ClashRun.Status.CANCELLED, progress_phase="", progress_percent=0)
            return
        test = run.test
        staged = run.staged
        models = _models_checked(test, staged)
        versions = _versions(models, staged)
        ClashRun.objects.filter(pk=run.pk).update(model_versions=versions)
        on_progress("loading", 1)
        placements = project_placements(test.project_id)
        should_stop = _stop_poll(run)
        facts, schemas, paths, meshes = {}, {}, {}, {}
        for model in models:
            converted, source = _geometry_source(model.id, staged)
            if converted is None:  # the child meshes its IFC, takes its facts and selects its elements from it
                meshes[model.id] = source
                facts[model.id], schemas[model.id] = {}, "IFC4"
            else:
                metadata = model_metadata(model.id)
                facts[model.id] = elements.facts(metadata)
                schemas[model.id] = metadata.get("schema") or "IFC4"
            paths[model.id] = converted or work_dir / f"{model.id}.bin"  # where the child writes the mesh it makes
        result = find_clashes_confined(
            _element_sets(test.a, placements, paths, facts, schemas), _element_sets(test.b, placements, paths, facts, schemas),
            kind=test.kind, tolerance=test.tolerance, distance=test.distance, work_dir=work_dir, meshes=meshes, specs=(test.a, test.b),
            on_progress=lambda phase, fraction: on_progress(phase, 1 + int(9 * fraction) if phase == "meshing" else 10 + int(85 * fraction)),
            should_stop=should_stop,
        )
        if not ClashRun.objects.filter(pk=run.pk, cancel_requested=False).exists():
            raise Cancelled("the clash run was cancelled")
        found, facts = result.clashes, {**facts, **result.facts}  # a meshed model's elements as its IFC has them
        on_progress("statuses", 96)
        with transaction.atomic():  # the clashes and the run's end together: a run another worker took records nothing
            summary = record_run(run, found, facts)
            if jobs.finish(CLASH_RUN, run, status=ClashRun.Status.DONE, summary=summary, error="", progress_phase="done", progress_percent=100):
                transaction.on_commit(lambda: _announce(run, staged))
            else:
                transaction.set_rollback(True)
    except Cancelled:
        jobs.finish(CLASH_RUN, run, status=ClashRun.Status.CANCELLED, progress_phase="", progress_percent=0)
    except (ApplicationError, RunFailed) as exc:
        _fail(run, str(exc))
    except Exception as exc:  # noqa: BLE001 - a run that cannot go on ends failed, saying why, instead of hanging running
        logger.exception("clash run %s failed", run.id)
        _fail(run, f"the clash run could not finish: {type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    logger.info("clash run %s of %s finished", run.id, run.test_id)


def run_leftovers(run: ClashRun) -> list[Path]:
    return [runs_root() / run.id]


def clash_run_now(run_id: str) -> None:
    """Runs this run here and now if it is queued (tests, the admin); a worker does the same through its task."""
    run = jobs.claim(CLASH_RUN, ClashRun.objects.filter(pk=run_id))
    if run is not None:
        jobs.run(CLASH_RUN, run)
