"""Requesting a check of a model version against IDS files: the IDS files named or uploaded, the product checked,
and the cache that answers a request with an earlier check of the same inputs (or with a failure it would meet again
under the same limits). The check then waits for its turn in the check queue (checks_app.services.runs)."""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time

from django.db import connection, transaction
from django.db.models import Q

from checks_app import selectors
from checks_app.jobs import CHECK
from checks_app.models import Check, IdsDocument
from checks_app.projects import project_of_model
from checks_app.services.ids_files import ids_document_store, remove_unused_documents, sha256_hex
from core import jobs
from core.jobs import wakeup
from core.errors import Invalid, NotFound, TooLarge
from core.limits import IDS_MAX_BYTES, size_limit_message
from issues_app.selectors import overrides_of_model
from models_app.models import IfcModel
from models_app.public import IFC_FILE, file_signature, model_file, saved_versions, version_product_key
from models_app.selectors import model_get

IDS_PER_CHECK = 10
VERSION_RE = re.compile(r"^v[1-9]\d{0,8}$")
CURRENT = "current"
ACTIVE_STATUSES = (Check.Status.QUEUED, Check.Status.RUNNING, Check.Status.DONE)
# A check worker wakes the gateway's requests waiting for a check (GET ...?waitSeconds=N) on this host through
# core.jobs.wakeup's sockets, under this name: a byte to each waiting request when a check ends
CHECK_ENDED = "check-ended"
MAX_WAIT_SECONDS = 30
# a waiting request reads its check at least this often: a check ended on another host, or failed by the recovery
# of a dead worker, wakes nobody here
WAIT_RECHECK_SECONDS = 0.5
# a waiting request holds a request thread (with PostgreSQL, a database connection) of the gateway: past this many at
# once in a process, a request is answered at once, as without waitSeconds (the client asks again)
MAX_WAITING_REQUESTS = 8
_waiting_slots = threading.BoundedSemaphore(MAX_WAITING_REQUESTS)


def check_time_limit_seconds() -> float:
    return float(os.environ.get("VIEWER_CHECK_TIMEOUT_SECONDS") or 900)


def check_memory_limit_mb() -> int:
    return int(os.environ.get("VIEWER_CHECK_MEMORY_MB") or 4096)


def limits_key() -> str:
    """The limits a check runs under, as kept with a failure the same request would meet again under them."""
    return f"time={check_time_limit_seconds():g}s memory={check_memory_limit_mb()}MB"


def check_requester(model: IfcModel) -> str:
    """Whose turn a check of the model takes in the fair queue: the model (the user, once there are accounts)."""
    return model.id


def _upload_name(file_name: str) -> str:
    """An uploaded file's name as an IDS name: its base name with other characters replaced by '_'."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(file_name or "").strip()).strip("._-")
    base = re.sub(r"\.{2,}", ".", base)[:100]
    return base or "upload.ids"


def _documents_for(model: IfcModel, ids_names: list[str] | None, uploads: list | None) -> tuple[list[tuple[str, IdsDocument]], bool]:
    """(name, document) of each IDS file of the request, and whether an upload's content was stored now."""
    items = ids_names if ids_names else uploads
    if not items:
        raise Invalid("name at least one IDS file: JSON {ids: [names of the project's IDS files]} or multipart parts 'ids'")
    if ids_names and uploads:
        raise Invalid("give the IDS files either by name (JSON) or as uploads (multipart), not both")
    if len(items) > IDS_PER_CHECK:
        raise Invalid(f"a check takes at most {IDS_PER_CHECK} IDS files, got {len(items)}")
    documents, stored = [], False
    if ids_names:
        project = project_of_model(model)
        if project is None:
            raise Invalid(f"model {model.id} belongs to no project: upload the IDS files with the request (multipart parts 'ids')")
        for name in ids_names:
            if not isinstance(name, str):
                raise Invalid(f"IDS names must be strings, got {name!r}")
            documents.append((name, selectors.ids_file_get(project.id, name).document))
    else:
        for upload in uploads:
            name = _upload_name(upload.name)
            if upload.size > IDS_MAX_BYTES:
                raise TooLarge(size_limit_message(IDS_MAX_BYTES, f"IDS file {name}"))
            document, created = ids_document_store(upload.read(), what=f"IDS file {name}")
            documents.append((name, document))
            stored = stored or created
    names = [name for name, _ in documents]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise Invalid(f"IDS file(s) named more than once in one check: {', '.join(duplicates)}")
    return documents, stored


def _product_key(model: IfcModel, version: str) -> str:
    if version == CURRENT:
        try:
            return f"{CURRENT}:{file_signature(model_file(model.id, IFC_FILE))}"
        except FileNotFoundError:
            raise NotFound(f"model {model.id} has no IFC yet (status {model.status})") from None
    versions = saved_versions(model.id)
    if version not in versions:
        raise NotFound(f"model {model.id} has no version {version} (saved versions: {', '.join(versions) or 'none'})")
    return version_product_key(model.id, version)


def check_cache_key(model_id: str, product_key: str, ids: list[dict], overrides: dict | None) -> str:
    return sha256_hex(json.dumps([model_id, product_key, ids, overrides], sort_keys=True, separators=(",", ":")))


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
        raise Invalid(f"model {model.id} is a {model.format.upper()} drawing: IDS checks need an IFC model")
    version = version or CURRENT
    if version != CURRENT and not VERSION_RE.match(str(version)):
        raise Invalid(f"invalid version {version!r}: \"current\" or a saved version v<n> (v1, v2, ...)")
    documents, stored = _documents_for(model, ids_names, uploads)
    ids = [{"name": name, "sha256": document.sha256} for name, document in documents]
    overrides = overrides_of_model(model.id) if include_overrides else None
    product_key = _product_key(model, version)
    cache_key = check_cache_key(model.id, product_key, ids, overrides)
    with transaction.atomic():
        if connection.features.has_select_for_update:  # SQLite: its IMMEDIATE transaction holds the write lock already
            IfcModel.objects.select_for_update().filter(pk=model.id).first()  # one start at a time per model
        answers = Q(status__in=ACTIVE_STATUSES) | Q(status=Check.Status.FAILED, failed_under_limits=limits_key())
        existing = Check.objects.filter(answers, model=model, cache_key=cache_key).order_by("-created_at").first()
        if existing is not None:
            return existing, True
        check = Check.objects.create(
            model=model, version=version, product_key=product_key, ids=ids, include_overrides=include_overrides,
            overrides=overrides, cache_key=cache_key, requester=check_requester(model),
        )
        kept = {document.sha256: document for _, document in documents}  # a new check: no link to look for first
        Check.documents.through.objects.bulk_create([Check.documents.through(check=check, idsdocument=document) for document in kept.values()])
        jobs.enqueue(CHECK, check.id)  # its turn; same database, same transaction: both or neither
    if stored:  # a request that stores no content leaves nothing new unused (a failed one leaves its uploads' content)
        remove_unused_documents()
    return check, False


def wait_seconds_param(raw: str | None) -> float:
    """The waitSeconds query parameter: absent or empty is 0 (answer at once), else a number from 0 to 30."""
    if raw is None or raw == "":
        return 0.0
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds <= MAX_WAIT_SECONDS:  # nan and infinities fail too
        raise Invalid(f"waitSeconds must be a number of seconds from 0 to {MAX_WAIT_SECONDS}, got {raw!r}")
    return seconds


def check_get_waiting(model_id: str, check_id: str, wait_seconds: float = 0) -> Check:
    """The check, its result as JSON text in check.result_json (selectors.check_get); with wait_seconds, once it has
    left queued and running (done or failed) or after wait_seconds, whichever comes first. Woken by the check worker
    when a check ends (CHECK_ENDED), read again at least every WAIT_RECHECK_SECONDS; no tight poll of the database.
    At most MAX_WAITING_REQUESTS wait at once per process."""
    check = selectors.check_get(model_id, check_id, result_as_json=True)
    if wait_seconds <= 0 or not _active(check) or not _waiting_slots.acquire(blocking=False):
        return check
    try:
        return _wait_for_end(model_id, check_id, time.monotonic() + wait_seconds)
    finally:
        _waiting_slots.release()


def _wait_for_end(model_id: str, check_id: str, deadline: float) -> Check:
    listener = wakeup.WakeUp(CHECK_ENDED)  # listening before the next read: an end between the two is not missed
    try:
        check = selectors.check_get(model_id, check_id, result_as_json=True)
        while _active(check) and (left := deadline - time.monotonic()) > 0:
            listener.wait(min(left, WAIT_RECHECK_SECONDS))
            check = selectors.check_get(model_id, check_id, result_as_json=True)
    finally:
        listener.close()
    return check


def _active(check: Check) -> bool:
    return check.status in (Check.Status.QUEUED, Check.Status.RUNNING)


def check_ended_notify() -> None:
    """Wakes the requests of this host waiting for a check (once the end is committed)."""
    transaction.on_commit(lambda: wakeup.wake(CHECK_ENDED), robust=True)
