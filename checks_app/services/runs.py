"""Running checks inside a check worker: the fair order of the check queue, one turn of it, the run of a claimed
check in a confined child process, and the recovery of checks whose worker died (core.jobs does the bookkeeping)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce, Greatest

from checks_app.engine.runner import RESULT_FILE, check_limits, run_check_process
from checks_app.models import Check
from checks_app.services.checks import (
    CHECK,
    CURRENT,
    check_cache_key,
    check_ended_notify,
    check_memory_limit_mb,
    check_time_limit_seconds,
    limits_key,
)
from core import jobs
from core.errors import ApplicationError, NotFound
from core.files import link_or_copy
from models_app.models import IfcModel
from models_app.public import IFC_FILE, file_signature, model_dir, model_file, version_ifc_fetch

logger = logging.getLogger(__name__)



def fair_order(queued: QuerySet) -> QuerySet:
    """Queued checks in the order the fair queue takes them: first those whose requester has nothing running, then
    by how long the requester has waited (since the later of its oldest queued check and the end of its last
    check), then oldest first. A flood of checks from one requester waits behind each other requester's next check
    instead of delaying it."""
    same_requester = Check.objects.filter(requester=OuterRef("requester"))
    oldest_queued = Subquery(same_requester.filter(status=Check.Status.QUEUED).order_by("created_at").values("created_at")[:1])
    last_finished = Subquery(same_requester.filter(finished_at__isnull=False).order_by("-finished_at").values("finished_at")[:1])
    return queued.annotate(
        requester_busy=Exists(same_requester.filter(status=Check.Status.RUNNING)),
        requester_waiting_since=Greatest(oldest_queued, Coalesce(last_finished, oldest_queued)),
    ).order_by("requester_busy", "requester_waiting_since", "created_at")


def _prepare_ifc(check: Check, work_dir: Path, on_progress) -> str:
    """Puts the IFC to check at work_dir/model.ifc; returns the product key of exactly that file."""
    target = work_dir / IFC_FILE
    if check.version == CURRENT:
        try:
            link_or_copy(model_file(check.model_id, IFC_FILE), target)  # this exact file, even if model.ifc is replaced meanwhile
        except FileNotFoundError:
            raise NotFound(f"model {check.model_id} has no IFC any more") from None
        return f"{CURRENT}:{file_signature(target)}"
    on_progress("fetching version", 2)
    return version_ifc_fetch(check.model_id, check.version, target)


def check_take_turn() -> str | None:
    """One turn of the check queue (core.jobs runs one per queued check): runs the queued check the fair order puts
    first, which need not be the check the turn was enqueued for. Returns its id (None: nothing queued)."""
    check = jobs.take(CHECK)
    return check.id if check else None


def check_run(check_id: str) -> None:
    """Runs this check now if it is queued."""
    check = jobs.claim(CHECK, Check.objects.filter(pk=check_id))
    if check is not None:
        jobs.run(CHECK, check)


def check_claimed_run(check: Check) -> None:
    """The check job's run: fetches the model version, runs the check in a child process, keeps the result."""
    on_progress = jobs.progress_writer(CHECK, check)
    work_dir = model_dir(check.model_id) / f".check-{check.id}"
    try:
        if not IfcModel.objects.filter(pk=check.model_id).exists():  # the default manager hides trashed models
            raise NotFound(f"model {check.model_id} was moved to the trash before its check ran")
        work_dir.mkdir()  # never parents: a deleted model's folder must not come back
        product_key = _prepare_ifc(check, work_dir, on_progress)
        documents = {document.sha256: document.content for document in check.documents.all()}
        job = {"ids": [{"name": item["name"], "content": documents[item["sha256"]]} for item in check.ids],
               "overrides": check.overrides if check.include_overrides else None}
        outcome = run_check_process(
            ifc_path=work_dir / IFC_FILE, job=job, work_dir=work_dir, timeout_seconds=check_time_limit_seconds(),
            limits=check_limits(settings.VIEWER, check_memory_limit_mb()), on_progress=on_progress,
        )
        fields = {"product_key": product_key}
        if product_key != check.product_key:  # model.ifc changed between the request and the run: say what was checked
            fields["cache_key"] = check_cache_key(check.model_id, product_key, check.ids, check.overrides)
        if not outcome.ok:
            jobs.finish(CHECK, check, status=Check.Status.FAILED, error=outcome.error, progress_phase="", progress_percent=0,
                    failed_under_limits=limits_key() if outcome.repeatable else "", **fields)
            return
        result = json.loads((work_dir / RESULT_FILE).read_text(encoding="utf-8"))
        result["model"] = {"id": check.model_id, "version": check.version}
        jobs.finish(CHECK, check, status=Check.Status.DONE, result=result, summary=result["summary"], error="", progress_phase="done", progress_percent=100, **fields)
    except (ApplicationError, OSError) as exc:
        message = str(exc.detail) if isinstance(exc, ApplicationError) else f"the check could not run: {exc}"
        jobs.finish(CHECK, check, status=Check.Status.FAILED, error=message[-2048:], progress_phase="", progress_percent=0)
    finally:
        check_ended_notify()  # the requests waiting for a check (GET ...?waitSeconds=N) read theirs again, meanwhile:
        shutil.rmtree(work_dir, ignore_errors=True)
    logger.info("IDS check %s of %s finished", check.id, check.model_id)


def check_leftovers(check: Check) -> list:
    return [model_dir(check.model_id) / f".check-{check.id}"]


def recover_interrupted_checks() -> list[str]:
    """Checks whose worker died mid-run are queued again (at most MAX_ATTEMPTS runs, then failed), with a turn each;
    when the queue holds fewer turns than queued checks (tasks lost), turns are added for queued checks that have
    none named after them. A turn too many is harmless: it finds nothing queued. Returns the check ids given a turn."""
    return jobs.recover(CHECK)
