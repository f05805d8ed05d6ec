"""Use cases of the review records: issues with screenshots, property overrides, the change log and the migration
of overrides into the build script."""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from pathlib import Path

from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.utils import timezone

from issues_app import bcf
from issues_app.models import OVERRIDE_FIELDS, ChangeEntry, Issue, Override, OverrideMigration
from issues_app.selectors import element_ifc_value, element_name_and_type, issue_list_json
from models_app import edit_client
from models_app.models import IfcModel
from models_app.services import model_get, request_conversion
from models_app.storage import model_dir, publish_file, temp_path_beside
from viewer_gateway.envelope import ApiError, Conflict, InvalidInput, NotFound, TooLarge, UpstreamError
from viewer_gateway.provenance import DEFAULT_AUTHOR, Provenance

logger = logging.getLogger(__name__)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SCREENSHOT_MAX_BYTES = 5 * 1024 * 1024
SCREENSHOT_NAME_RE = re.compile(r"^(i_[0-9a-f]{12})\.png$")
ISSUE_ID_RE = re.compile(r"^i_[0-9a-f]{12}$")
MIGRATION_STALE_AFTER = timedelta(minutes=15)


# --- issues ----------------------------------------------------------------------------------------------------


def issue_list(model_id: str):
    return model_get(model_id).issues.order_by("-created_at")


def issue_list_json_data(model_id: str) -> bytes:
    """The JSON of the model's issues as the API shows them, newest first."""
    return issue_list_json(model_get(model_id).id)


def issue_get(model_id: str, issue_id: str) -> Issue:
    model = model_get(model_id)
    if not ISSUE_ID_RE.match(issue_id or ""):
        raise NotFound(f"invalid issue id {issue_id!r}: expected i_ followed by 12 lowercase hex digits")
    try:
        return model.issues.get(pk=issue_id)
    except Issue.DoesNotExist:
        raise NotFound(f"issue {issue_id} not found in model {model.id}") from None


def screenshot_file(model_id: str, file_name: str) -> Path:
    """Path of an issue screenshot; the name must be exactly i_<12 hex>.png (no path tricks reach the disk)."""
    model = model_get(model_id)
    if not SCREENSHOT_NAME_RE.match(file_name or ""):
        raise NotFound(f"invalid screenshot name {file_name!r}: expected i_ + 12 hex digits + .png")
    path = model_dir(model.id) / "issues" / file_name
    if not path.is_file():
        raise NotFound(f"screenshot {file_name} not found")
    return path


def _check_screenshot(upload) -> None:
    if upload.size > SCREENSHOT_MAX_BYTES:
        raise TooLarge("screenshot exceeds 5 MB")
    upload.seek(0)
    if upload.read(len(PNG_SIGNATURE)) != PNG_SIGNATURE:
        raise InvalidInput("screenshot must be a PNG image (the file does not start with the PNG signature)")
    upload.seek(0)


def _store_screenshot(model_id: str, issue_id: str, upload) -> str:
    folder = model_dir(model_id) / "issues"
    try:
        folder.mkdir(exist_ok=True)  # never the model folder itself: a deleted model stays deleted
    except FileNotFoundError:
        raise NotFound(f"model {model_id} not found") from None
    target = folder / f"{issue_id}.png"
    staged = temp_path_beside(target)
    with open(staged, "wb") as handle:
        for chunk in upload.chunks():
            handle.write(chunk)
    publish_file(staged, target)
    return f"issues/{target.name}"


def issue_create(*, model_id: str, data: dict, screenshot=None) -> Issue:
    """data: validated fields (entityId, entityName, entityType, title, comment, author, provenance, camera)."""
    model = model_get(model_id)
    if screenshot is not None:
        _check_screenshot(screenshot)
    issue = Issue(
        model=model,
        entity_id=data.get("entityId", ""),
        entity_name=data.get("entityName", ""),
        entity_type=data.get("entityType", ""),
        title=data["title"],
        comment=data.get("comment", ""),
        author=data.get("author") or DEFAULT_AUTHOR,
        provenance=data.get("provenance") or Provenance.UI.value,
        camera=data.get("camera"),
    )
    stored = None
    try:
        with transaction.atomic():
            if screenshot is not None:
                issue.screenshot = stored = _store_screenshot(model.id, issue.id, screenshot)
            issue.save(force_insert=True)
    except BaseException:
        if stored:
            (model_dir(model.id) / stored).unlink(missing_ok=True)
        raise
    return issue


def issue_update(*, model_id: str, issue_id: str, changes: dict) -> Issue:
    """Only the given fields change (row lock, so concurrent changes of other fields survive); nothing given
    changes nothing."""
    issue_get(model_id, issue_id)
    with transaction.atomic():
        issue = Issue.objects.select_for_update().get(pk=issue_id)
        fields = [field for field in ("title", "comment", "status") if field in changes and getattr(issue, field) != changes[field]]
        for field in fields:
            setattr(issue, field, changes[field])
        if fields:
            issue.save(update_fields=[*fields, "updated_at"])
    return issue


def issue_delete(*, model_id: str, issue_id: str) -> None:
    issue = issue_get(model_id, issue_id)
    screenshot = model_dir(issue.model_id) / issue.screenshot if issue.screenshot else None
    issue.delete()
    if screenshot is not None:
        screenshot.unlink(missing_ok=True)


# --- overrides and change log ----------------------------------------------------------------------------------


def override_set(model_id: str) -> dict[str, dict[str, str]]:
    overrides: dict[str, dict[str, str]] = {}
    for override in model_get(model_id).overrides.order_by("entity_id", "field"):
        overrides.setdefault(override.entity_id, {})[override.field] = override.value
    return overrides


def _entity_overrides(model: IfcModel, entity_id: str) -> dict[str, str]:
    return dict(model.overrides.filter(entity_id=entity_id).values_list("field", "value"))


def entity_properties_update(
    *,
    model_id: str,
    entity_id: str,
    entity_name: str,
    fields: dict[str, str],
    author: str = DEFAULT_AUTHOR,
    provenance: str = Provenance.UI.value,
) -> dict[str, str]:
    """Sets (or, with "", clears) whitelisted overrides of one element; one change entry per changed field, whose
    new value is the value that is effective afterwards (the IFC's when cleared). Returns the element's effective
    overrides. One transaction, serialised per model."""
    model_get(model_id)
    if not entity_id or len(entity_id) > 64:
        raise InvalidInput(f"invalid entity id {entity_id!r}: 1 to 64 characters")
    unknown = sorted(set(fields) - set(OVERRIDE_FIELDS))
    if unknown:
        raise InvalidInput(f"field(s) outside the whitelist: {', '.join(unknown)} (allowed: {', '.join(OVERRIDE_FIELDS)})")
    with transaction.atomic():
        model = IfcModel.objects.select_for_update().get(pk=model_id)  # concurrent writers queue here
        current = _entity_overrides(model, entity_id)
        for field, value in fields.items():
            ifc_value = element_ifc_value(model.id, entity_id, field)
            effective = current.get(field, ifc_value)
            if value == "":
                if field not in current:
                    continue
                model.overrides.filter(entity_id=entity_id, field=field).delete()
                del current[field]
                new_effective = ifc_value
            elif value == effective:
                continue
            else:
                Override.objects.update_or_create(
                    model=model, entity_id=entity_id, field=field,
                    defaults={"value": value, "entity_name": entity_name},
                )
                current[field] = new_effective = value
            ChangeEntry.objects.create(
                model=model, entity_id=entity_id, entity_name=entity_name, field=field,
                old_value=effective, new_value=new_effective, author=author, provenance=provenance,
                operation=ChangeEntry.Operation.UPDATE,
            )
    return current


def change_log(model_id: str):
    return model_get(model_id).changes.order_by("-created_at", "-seq")


def _as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def record_version_changes(*, model_id: str, version: str, changed: list[dict], author: str, provenance: str, operation: str) -> list[ChangeEntry]:
    """Change entries for a saved version: one per changed field of its semantic diff ({guid, changes: [{field, old,
    new}]}), with the diff item kept in `diff`."""
    model = model_get(model_id)
    entries = []
    with transaction.atomic():
        IfcModel.objects.select_for_update().filter(pk=model.pk).first()
        if model.changes.filter(diff__version=version).exists():
            return []  # a replayed save: its entries are written
        for item in changed:
            name_change = next((c for c in item["changes"] if c["field"] == "Name"), None)
            entity_name = _as_text(name_change["new"]) if name_change else element_ifc_value(model.id, item["guid"], "Name")
            for change in item["changes"]:
                entries.append(ChangeEntry.objects.create(
                    model=model, entity_id=item["guid"], entity_name=entity_name, field=change["field"],
                    old_value=_as_text(change["old"]), new_value=_as_text(change["new"]), author=author,
                    provenance=provenance, operation=operation, diff={"version": version, **change},
                ))
    return entries


def _migrate_one(model_id: str, override: Override) -> None:
    """One override -> one edit-call on the element's call site; raises ApiError with the reason on failure."""
    located = edit_client.call("GET", f"/models/{model_id}/script/locate", params={"guid": override.entity_id})
    if located.get("stale"):
        raise InvalidInput("the staged script has changes that were not run; run or discard them first")
    if not located.get("found"):
        raise InvalidInput("the element is not created by the build script (no call site in the script map)")
    edit_client.call(
        "POST", f"/models/{model_id}/script/edit-call",
        json={"designKey": located["designKey"], "argument": override.field, "value": override.value},
    )


def _discard_staging(model_id: str) -> None:
    """Takes the migration's staged edit-calls back (staging was empty before it started)."""
    try:
        edit_client.call("POST", f"/models/{model_id}/script/discard")
    except ApiError:
        logger.exception("discarding the failed migration of %s failed", model_id)


def _claim_migration(model: IfcModel) -> None:
    OverrideMigration.objects.filter(model=model, started_at__lt=timezone.now() - MIGRATION_STALE_AFTER).delete()
    try:
        with transaction.atomic():
            OverrideMigration.objects.create(model=model)
    except IntegrityError:
        raise Conflict(f"a migration of model {model.id} is already running") from None


def overrides_migrate(*, model_id: str, author: str = DEFAULT_AUTHOR, provenance: str = Provenance.UI.value) -> dict:
    """Replays every override as a real script edit (edit-call), then one save with operation migrate. One
    migration per model at a time; refused while the model has staged edits of its own (the save would commit
    them). Migrated fields lose their override (unless it changed meanwhile) and get a change entry (operation
    migrate); failed fields keep it, with a reason. An unreachable edit service fails the whole migration (50200)."""
    model = model_get(model_id)
    _claim_migration(model)
    try:
        if edit_client.call("GET", f"/models/{model.id}/script").get("source") == "staging":
            raise Conflict("the model has staged edits: save or discard them before migrating overrides")
        return _migrate(model, author, provenance)
    finally:
        OverrideMigration.objects.filter(model=model).delete()


def _migrate(model: IfcModel, author: str, provenance: str) -> dict:
    migrated, failed = [], []
    for override in list(model.overrides.order_by("entity_id", "field")):
        item = {"entityId": override.entity_id, "field": override.field, "value": override.value}
        try:
            _migrate_one(model.id, override)
            migrated.append((override, item))
        except UpstreamError:
            if migrated:
                _discard_staging(model.id)
            raise
        except ApiError as exc:
            failed.append({**item, "reason": str(exc.detail)})
    if not migrated:
        return {"migrated": [], "failed": failed, "version": None}
    try:
        saved = edit_client.call(
            "POST", f"/models/{model.id}/script/save",
            json={"note": "migrate overrides", "operation": "migrate", "author": author, "provenance": {"source": provenance}},
        )
    except ApiError as exc:
        _discard_staging(model.id)
        if isinstance(exc, UpstreamError):
            raise
        reason = f"the migrated script could not be saved: {exc.detail}"
        return {"migrated": [], "failed": failed + [{**item, "reason": reason} for _, item in migrated], "version": None}
    request_conversion(model.id)
    field_changes = {(c["guid"], change["field"]): change for c in (saved.get("diff") or {}).get("changed", []) for change in c["changes"]}
    with transaction.atomic():
        for override, item in migrated:
            ChangeEntry.objects.create(
                model=model, entity_id=override.entity_id, entity_name=override.entity_name, field=override.field,
                old_value=element_ifc_value(model.id, override.entity_id, override.field), new_value=override.value,
                author=author, provenance=provenance, operation=ChangeEntry.Operation.MIGRATE,
                diff={"version": saved["version"], **field_changes.get((override.entity_id, override.field), {"field": override.field})},
            )
            if not Override.objects.filter(pk=override.pk, value=override.value).delete()[0]:
                item["overrideKept"] = "the override changed during the migration and keeps its new value"
    return {"migrated": [item for _, item in migrated], "failed": failed, "version": saved["version"]}


# --- BCF exchange ----------------------------------------------------------------------------------------------


def _screenshot_bytes(model_id: str, issue: Issue) -> bytes | None:
    if not issue.screenshot:
        return None
    try:
        return (model_dir(model_id) / issue.screenshot).read_bytes()
    except FileNotFoundError:
        return None


def issues_export_bcf(model_id: str) -> tuple[str, bytes]:
    """The model's issues as a BCF 3.0 archive: (file name, bytes)."""
    model = model_get(model_id)
    records = [
        bcf.IssueRecord(
            issue_id=issue.id, title=issue.title, comment=issue.comment, status=issue.status, author=issue.author,
            provenance=issue.provenance, entity_id=issue.entity_id, entity_type=issue.entity_type, camera=issue.camera,
            created_at=issue.created_at, updated_at=issue.updated_at, screenshot_png=_screenshot_bytes(model.id, issue),
            topic_guid=issue.bcf_topic_guid or bcf.topic_guid_for(model.id, issue.id),
        )
        for issue in model.issues.order_by("created_at")
    ]
    return f"{model.id}-issues.bcfzip", bcf.write_bcf_archive(model.name or model.id, records)


def _known_topic_guids(model: IfcModel) -> dict[str, str]:
    known = {}
    for issue_id, topic_guid in model.issues.values_list("id", "bcf_topic_guid"):
        known[bcf.topic_guid_for(model.id, issue_id)] = issue_id
        if topic_guid:
            known[topic_guid] = issue_id
    return known


def _skip_reason(topic: bcf.TopicRecord, known: dict[str, str]) -> str | None:
    if topic.guid in known:
        return f"already imported as issue {known[topic.guid]}"
    if not topic.title:
        return "the topic has no title"
    if len(topic.title) > 512:
        return "the title is longer than 512 characters"
    if len(topic.entity_id) > 64:
        return "the selected component's IfcGuid is longer than 64 characters"
    return None


def _topic_screenshot(topic: bcf.TopicRecord) -> ContentFile | None:
    if not topic.snapshot:
        return None
    if not topic.snapshot.startswith(PNG_SIGNATURE):
        topic.notes.append("snapshot not kept: only PNG screenshots are stored")
        return None
    if len(topic.snapshot) > SCREENSHOT_MAX_BYTES:
        topic.notes.append("snapshot not kept: larger than 5 MB")
        return None
    return ContentFile(topic.snapshot, name="snapshot.png")


def _issue_from_topic(model: IfcModel, topic: bcf.TopicRecord) -> Issue:
    entity_name, entity_type = element_name_and_type(model.id, topic.entity_id) if topic.entity_id else ("", "")
    if not entity_type:
        entity_type = next((label for label in topic.labels if label.startswith("Ifc")), "")
    data = {
        "entityId": topic.entity_id, "entityName": entity_name[:512], "entityType": entity_type[:128], "title": topic.title,
        "comment": topic.comment, "author": (topic.author or DEFAULT_AUTHOR)[:255], "provenance": topic.provenance, "camera": topic.camera,
    }
    issue = issue_create(model_id=model.id, data=data, screenshot=_topic_screenshot(topic))
    # updated_at stays the import time: the cached issue list relies on every write moving it forward
    Issue.objects.filter(pk=issue.id).update(status=topic.status, bcf_topic_guid=topic.guid, created_at=topic.created_at or issue.created_at)
    return issue


def issues_import_bcf(*, model_id: str, archive) -> dict:
    """Topics of a BCF 3.0 archive become issues of the model (first viewpoint: camera, selected element, snapshot;
    comments appended to the description). All or nothing: a bad archive raises 40001 and imports nothing; topics
    that cannot become issues are reported as skipped with the reason."""
    model = model_get(model_id)
    try:
        topics = bcf.read_bcf_archive(archive)
    except bcf.BcfArchiveError as exc:
        raise InvalidInput(f"cannot import the BCF archive: {exc}") from None
    imported, skipped, created = [], [], []
    try:
        with transaction.atomic():
            IfcModel.objects.select_for_update().get(pk=model.id)  # one import at a time per model
            known = _known_topic_guids(model)
            for topic in topics:
                reason = _skip_reason(topic, known)
                if reason:
                    skipped.append({"topic": topic.guid, "title": topic.title, "reason": reason})
                    continue
                issue = _issue_from_topic(model, topic)
                created.append(issue)
                known[topic.guid] = issue.id
                imported.append({"topic": topic.guid, "issueId": issue.id, "title": topic.title, "notes": topic.notes})
    except BaseException:
        for issue in created:
            if issue.screenshot:
                (model_dir(model.id) / issue.screenshot).unlink(missing_ok=True)
        raise
    return {"imported": imported, "skipped": skipped}
