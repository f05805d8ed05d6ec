"""Use cases of automated review: IDS files per project, checks of a model version against IDS files (queued,
run by the check workers, cached), reports, failures pinned as review issues, and a summary for the agent."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from checks_app import selectors
from checks_app.engine.ids_schema import IdsInvalid, validate_ids
from checks_app.engine.runner import RESULT_FILE, check_limits, run_check_process
from checks_app.models import IDS_NAME_PATTERN, Check, IdsDocument, IdsFile, PinnedFailure
from checks_app.projects import project_get, project_of_model
from core import jobs
from issues_app.models import Issue
from issues_app.services import issue_create, issue_update, override_set
from models_app import edit_client
from models_app.models import IfcModel
from models_app.services import model_get
from models_app.storage import IFC_FILE, file_signature, model_dir, model_file
from viewer_gateway.envelope import ApiError, Conflict, InvalidInput, NotFound, TooLarge
from viewer_gateway.provenance import DEFAULT_AUTHOR, Provenance
from viewer_gateway.uploads import MEGABYTE

logger = logging.getLogger(__name__)

IDS_MAX_BYTES = 5 * MEGABYTE
IDS_PER_CHECK = 10
IDS_NAME_RE = re.compile(rf"^{IDS_NAME_PATTERN}$")
VERSION_RE = re.compile(r"^v[1-9]\d{0,8}$")
CURRENT = "current"
ACTIVE_STATUSES = (Check.Status.QUEUED, Check.Status.RUNNING, Check.Status.DONE)
CHECK = "check"  # the job kind (checks_app.jobs)
MAX_ATTEMPTS = 3
ISSUE_TITLE_PREFIX = "IDS: "


def check_time_limit_seconds() -> float:
    return float(os.environ.get("VIEWER_CHECK_TIMEOUT_SECONDS") or 900)


def check_memory_limit_mb() -> int:
    return int(os.environ.get("VIEWER_CHECK_MEMORY_MB") or 4096)


def _limits_key() -> str:
    """The limits a check runs under, as kept with a failure the same request would meet again under them."""
    return f"time={check_time_limit_seconds():g}s memory={check_memory_limit_mb()}MB"


def check_requester(model: IfcModel) -> str:
    """Whose turn a check of the model takes in the fair queue: the model (the user, once there are accounts)."""
    return model.id


def _sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


# --- IDS files of a project ------------------------------------------------------------------------------------


def ids_name_check(name: str) -> str:
    if not IDS_NAME_RE.match(name or "") or ".." in name:
        raise InvalidInput(f"invalid IDS name {name!r}: 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit, no '..'")
    return name


def ids_document_store(data: bytes, *, what: str = "the IDS file") -> IdsDocument:
    """Validates an IDS file (XSD 1.0, readable) and keeps its content once; 40002 above 5 MB, 40001 invalid."""
    if len(data) > IDS_MAX_BYTES:
        raise TooLarge(f"{what} exceeds the limit of {IDS_MAX_BYTES // MEGABYTE} MB")
    try:
        info = validate_ids(data)
    except IdsInvalid as exc:
        raise InvalidInput(f"{what} is not a valid IDS 1.0 file: {exc}") from None
    document, _ = IdsDocument.objects.get_or_create(
        sha256=_sha256(info.text),
        defaults={"content": info.text, "size": len(data), "title": info.title[:512], "specifications": info.specifications},
    )
    return document


def _remove_unused_documents() -> None:
    IdsDocument.objects.filter(files=None, checks=None).delete()


def ids_file_put(*, project_id: str, name: str, data: bytes) -> tuple[IdsFile, bool]:
    """Creates or replaces a project's IDS file. Returns (file, created)."""
    project = project_get(project_id)
    ids_name_check(name)
    document = ids_document_store(data)
    with transaction.atomic():
        ids_file, created = IdsFile.objects.select_for_update().get_or_create(project=project, name=name, defaults={"document": document})
        if not created and ids_file.document_id != document.sha256:
            ids_file.document = document
            ids_file.save(update_fields=["document", "updated_at"])
    _remove_unused_documents()
    return ids_file, created


def ids_file_delete(*, project_id: str, name: str) -> None:
    selectors.ids_file_get(project_id, name).delete()
    _remove_unused_documents()


# --- starting a check ------------------------------------------------------------------------------------------


def _upload_name(file_name: str) -> str:
    """An uploaded file's name as an IDS name: its base name with other characters replaced by '_'."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(file_name or "").strip()).strip("._-")
    base = re.sub(r"\.{2,}", ".", base)[:100]
    return base or "upload.ids"


def _documents_for(model: IfcModel, ids_names: list[str] | None, uploads: list | None) -> list[tuple[str, IdsDocument]]:
    items = ids_names if ids_names else uploads
    if not items:
        raise InvalidInput("name at least one IDS file: JSON {ids: [names of the project's IDS files]} or multipart parts 'ids'")
    if ids_names and uploads:
        raise InvalidInput("give the IDS files either by name (JSON) or as uploads (multipart), not both")
    if len(items) > IDS_PER_CHECK:
        raise InvalidInput(f"a check takes at most {IDS_PER_CHECK} IDS files, got {len(items)}")
    if ids_names:
        project = project_of_model(model)
        if project is None:
            raise InvalidInput(f"model {model.id} belongs to no project: upload the IDS files with the request (multipart parts 'ids')")
        documents = []
        for name in ids_names:
            if not isinstance(name, str):
                raise InvalidInput(f"IDS names must be strings, got {name!r}")
            documents.append((name, selectors.ids_file_get(project.id, name).document))
    else:
        documents = []
        for upload in uploads:
            name = _upload_name(upload.name)
            if upload.size > IDS_MAX_BYTES:
                raise TooLarge(f"IDS file {name} exceeds the limit of {IDS_MAX_BYTES // MEGABYTE} MB")
            documents.append((name, ids_document_store(upload.read(), what=f"IDS file {name}")))
    names = [name for name, _ in documents]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise InvalidInput(f"IDS file(s) named more than once in one check: {', '.join(duplicates)}")
    return documents


def _product_key(model: IfcModel, version: str) -> str:
    if version == CURRENT:
        try:
            return f"{CURRENT}:{file_signature(model_file(model.id, IFC_FILE))}"
        except FileNotFoundError:
            raise NotFound(f"model {model.id} has no IFC yet (status {model.status})") from None
    versions = edit_client.call("GET", f"/models/{model.id}/versions").get("versions") or []
    if version not in {item.get("version") for item in versions}:
        known = ", ".join(item.get("version", "") for item in versions) or "none"
        raise NotFound(f"model {model.id} has no version {version} (saved versions: {known})")
    return version


def _cache_key(model_id: str, product_key: str, ids: list[dict], overrides: dict | None) -> str:
    return _sha256(json.dumps([model_id, product_key, ids, overrides], sort_keys=True, separators=(",", ":")))


def check_start(
    *,
    model_id: str,
    ids_names: list[str] | None = None,
    uploads: list | None = None,
    version: str | None = None,
    include_overrides: bool = False,
) -> tuple[Check, bool]:
    """Queues a check of the model's version ("current" = the working product, default; or "v<n>") against IDS
    files (names of the model's project's files, or uploaded files). The same model product, IDS contents and names
    (and overrides, when included) as an existing queued, running or finished check answer that check instead, and
    so does a check of them that failed in a way it would fail again under the same limits (time limit, memory cap).
    Returns (check, reused)."""
    model = model_get(model_id)
    if model.format != IfcModel.Format.IFC:
        raise InvalidInput(f"model {model.id} is a {model.format.upper()} drawing: IDS checks need an IFC model")
    version = version or CURRENT
    if version != CURRENT and not VERSION_RE.match(str(version)):
        raise InvalidInput(f"invalid version {version!r}: \"current\" or a saved version v<n> (v1, v2, ...)")
    documents = _documents_for(model, ids_names, uploads)
    ids = [{"name": name, "sha256": document.sha256} for name, document in documents]
    overrides = override_set(model.id) if include_overrides else None
    product_key = _product_key(model, version)
    cache_key = _cache_key(model.id, product_key, ids, overrides)
    with transaction.atomic():
        IfcModel.objects.select_for_update().filter(pk=model.id).first()  # one start at a time per model
        answers = Q(status__in=ACTIVE_STATUSES) | Q(status=Check.Status.FAILED, failed_under_limits=_limits_key())
        existing = Check.objects.filter(answers, model=model, cache_key=cache_key).order_by("-created_at").first()
        if existing is not None:
            return existing, True
        check = Check.objects.create(
            model=model, version=version, product_key=product_key, ids=ids, include_overrides=include_overrides,
            overrides=overrides, cache_key=cache_key, requester=check_requester(model),
        )
        check.documents.set([document for _, document in documents])
        jobs.enqueue(CHECK, check.id)  # its turn; same database, same transaction: both or neither
    _remove_unused_documents()
    return check, False


# --- running a check (inside a check worker) -------------------------------------------------------------------


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
        source = model_file(check.model_id, IFC_FILE)
        try:
            os.link(source, target)  # this exact file, even if model.ifc is replaced meanwhile
        except FileNotFoundError:
            raise NotFound(f"model {check.model_id} has no IFC any more") from None
        except OSError:
            shutil.copyfile(source, target)
        return f"{CURRENT}:{file_signature(target)}"
    on_progress("fetching version", 2)
    edit_client.version_ifc_download(check.model_id, check.version, target)
    return check.version


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
            fields["cache_key"] = _cache_key(check.model_id, product_key, check.ids, check.overrides)
        if not outcome.ok:
            jobs.finish(CHECK, check, status=Check.Status.FAILED, error=outcome.error, progress_phase="", progress_percent=0,
                    failed_under_limits=_limits_key() if outcome.repeatable else "", **fields)
            return
        result = json.loads((work_dir / RESULT_FILE).read_text(encoding="utf-8"))
        result["model"] = {"id": check.model_id, "version": check.version}
        jobs.finish(CHECK, check, status=Check.Status.DONE, result=result, summary=result["summary"], error="", progress_phase="done", progress_percent=100, **fields)
    except (ApiError, OSError) as exc:
        message = str(exc.detail) if isinstance(exc, ApiError) else f"the check could not run: {exc}"
        jobs.finish(CHECK, check, status=Check.Status.FAILED, error=message[-2048:], progress_phase="", progress_percent=0)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    logger.info("IDS check %s of %s finished", check.id, check.model_id)


def check_leftovers(check: Check) -> list:
    return [model_dir(check.model_id) / f".check-{check.id}"]


def recover_interrupted_checks() -> list[str]:
    """Checks whose worker died mid-run are queued again (at most MAX_ATTEMPTS runs, then failed), with a turn each;
    when the queue holds fewer turns than queued checks (tasks lost), turns are added for queued checks that have
    none named after them. A turn too many is harmless: it finds nothing queued. Returns the check ids given a turn."""
    return jobs.recover(CHECK)


# --- reports ---------------------------------------------------------------------------------------------------


def _done_check(model_id: str, check_id: str) -> Check:
    check = selectors.check_get(model_id, check_id)
    if check.status != Check.Status.DONE:
        detail = f": {check.error}" if check.status == Check.Status.FAILED else ""
        raise Conflict(f"check {check.id} is {check.status}{detail}; its result exists once it is done")
    return check


def check_report_html(*, model_id: str, check_id: str) -> tuple[str, str]:
    """(file name, HTML) of a self-contained report a person can send."""
    from checks_app.reports import html_report

    check = _done_check(model_id, check_id)
    return f"{check.model_id}-{check.id}.html", html_report(check)


def check_report_bcf(*, model_id: str, check_id: str, per: str = "element") -> tuple[str, bytes]:
    """(file name, BCF 3.0 archive): one topic per failing element, or per failing specification."""
    from checks_app.reports import bcf_report

    if per not in ("element", "specification"):
        raise InvalidInput(f"per must be element or specification, got {per!r}")
    check = _done_check(model_id, check_id)
    return f"{check.model_id}-{check.id}-{per}.bcfzip", bcf_report(check, per)


# --- pinning failures as review issues -------------------------------------------------------------------------


def specification_key(spec: dict) -> str:
    return (spec.get("identifier") or spec["name"])[:255]


def _failing_elements(result: dict) -> tuple[dict[tuple, dict], set[tuple], set[tuple]]:
    """({(ids, spec, guid): {spec, failures}}, checked (ids, spec) pairs, (ids, spec) pairs with truncated failures).
    A failing specification with no failing element (too few applicable elements) is one entry with guid ""."""
    failing, checked, truncated = {}, set(), set()
    for spec in result["specifications"]:
        pair = (spec["ids"], specification_key(spec))
        checked.add(pair)
        if spec.get("truncated"):
            truncated.add(pair)
        if spec["status"] != "fail":
            continue
        if not spec["failures"]:
            failing[(*pair, "")] = {"spec": spec, "failures": []}
        for failure in spec["failures"]:
            failing.setdefault((*pair, failure["guid"][:64]), {"spec": spec, "failures": []})["failures"].append(failure)
    return failing, checked, truncated


def _issue_data(check: Check, spec: dict, failures: list[dict], author: str, provenance: str) -> dict:
    lines = [f"IDS check {check.id} ({check.version}) of {spec['ids']}: specification \"{spec['name']}\"."]
    if spec.get("instructions"):
        lines.append(f"Instructions: {spec['instructions']}")
    if not failures:
        lines.append(spec.get("reason") or "the specification fails")
    for failure in failures:
        lines.append(f"- {failure['requirement']}: found {failure['found']}; expected {failure['expected']}")
    first = failures[0] if failures else {"guid": "", "name": "", "type": ""}
    return {
        "entityId": first["guid"][:64], "entityName": first["name"][:512], "entityType": first["type"][:128],
        "title": (ISSUE_TITLE_PREFIX + spec["name"])[:512], "comment": "\n".join(lines), "author": author, "provenance": provenance,
    }


def _pin_entry(link: PinnedFailure) -> dict:
    return {"issueId": link.issue_id, "ids": link.ids_name, "specification": link.specification, "guid": link.guid}


def check_pin_issues(*, model_id: str, check_id: str, author: str = DEFAULT_AUTHOR, provenance: str = Provenance.UI.value) -> dict:
    """Pins the failures of a finished check as review issues, one per failing (IDS file, specification, element),
    deduplicated across re-checks of the model: a failure with an open issue is left as it is (unchanged), one whose
    issue was resolved is reopened, a new one gets an issue (created), and the issue of a failure this check no
    longer finds (the specification was checked and the element passes or is gone) is resolved. Specifications with
    more failures than a result keeps are never resolved by absence. One transaction holding the model's row."""
    check = _done_check(model_id, check_id)
    failing, checked, truncated = _failing_elements(check.result)
    answer = {"created": [], "reopened": [], "resolved": [], "unchanged": []}
    with transaction.atomic():
        model = IfcModel.objects.select_for_update().get(pk=check.model_id)
        links = {(link.ids_name, link.specification, link.guid): link for link in PinnedFailure.objects.select_related("issue").filter(model=model)}
        for key, item in failing.items():
            link = links.get(key)
            if link is None:
                issue = issue_create(model_id=model.id, data=_issue_data(check, item["spec"], item["failures"], author, provenance))
                link = PinnedFailure.objects.create(model=model, ids_name=key[0], specification=key[1], guid=key[2], issue=issue, last_check=check)
                answer["created"].append(_pin_entry(link))
                continue
            if link.issue.status == Issue.Status.RESOLVED:
                issue_update(model_id=model.id, issue_id=link.issue_id, changes={"status": Issue.Status.OPEN})
                answer["reopened"].append(_pin_entry(link))
            else:
                answer["unchanged"].append(_pin_entry(link))
            PinnedFailure.objects.filter(pk=link.pk).update(last_check=check, updated_at=timezone.now())
        for key, link in links.items():
            if key in failing or key[:2] not in checked or key[:2] in truncated:
                continue
            if link.issue.status != Issue.Status.RESOLVED:
                issue_update(model_id=model.id, issue_id=link.issue_id, changes={"status": Issue.Status.RESOLVED})
                answer["resolved"].append(_pin_entry(link))
    return answer


# --- for the agent ---------------------------------------------------------------------------------------------


def failures_explain(*, model_id: str, check_id: str, examples_per_specification: int = 5) -> dict:
    """A short account of a check for a language model: the state, and per failing specification what it asks
    (requirements, instructions), how many elements fail and a few examples with found and expected values.
    `text` says the same in a few lines."""
    check = selectors.check_get(model_id, check_id)
    state = {"checkId": check.id, "modelId": check.model_id, "version": check.version, "status": check.status,
             "progress": {"phase": check.progress_phase, "percent": check.progress_percent}}
    if check.status == Check.Status.FAILED:
        return {**state, "error": check.error, "text": f"Check {check.id} failed: {check.error}"}
    if check.status != Check.Status.DONE:
        return {**state, "text": f"Check {check.id} is {check.status} ({check.progress_phase} {check.progress_percent}%); ask again when it is done."}
    result = check.result
    failing = []
    for spec in result["specifications"]:
        if spec["status"] != "fail":
            continue
        failing.append({
            "specification": spec["name"], "ids": spec["ids"], "reason": spec["reason"], "applicable": spec["applicable"],
            "failedElements": spec["failedElements"], "requirements": spec["requirements"], "instructions": spec.get("instructions", ""),
            "examples": [{key: failure[key] for key in ("guid", "name", "type", "requirement", "found", "expected")} for failure in spec["failures"][:examples_per_specification]],
        })
    summary = result["summary"]
    lines = [f"Check {check.id} of model {check.model_id} ({check.version}"
             + (", with overrides" if check.include_overrides else "") + f"): {summary['passed']} of {summary['specifications']} specifications pass."]
    for item in failing:
        lines.append(f"FAIL {item['specification']} ({item['ids']}): {item['failedElements']} of {item['applicable']} elements fail"
                     + (f"; {item['reason']}" if item["reason"] and not item["failedElements"] else "") + ".")
        for example in item["examples"][:2]:
            lines.append(f"  e.g. {example['type']} {example['guid']} {example['name']!r}: {example['requirement']}; found {example['found']}, expected {example['expected']}")
    return {**state, "summary": summary, "failing": failing, "text": "\n".join(lines)}


def check_get(*, model_id: str, check_id: str) -> dict:
    """The check as GET /api/v1/models/{id}/checks/{checkId} shows it (with `result` when done), for callers outside
    HTTP such as the agent's tools."""
    from checks_app.serializers import CheckDetailSerializer

    return dict(CheckDetailSerializer(selectors.check_get(model_id, check_id)).data)
