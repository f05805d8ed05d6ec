"""Use cases of the review records: issues with screenshots, property overrides and the change log."""

from __future__ import annotations

import re
from pathlib import Path

from django.db import transaction

from issues_app.models import OVERRIDE_FIELDS, ChangeEntry, Issue, Override
from models_app.models import IfcModel
from models_app.selectors import element_ifc_value
from models_app import edit_client
from models_app.services import model_get, request_conversion
from models_app.storage import model_dir, publish_file, temp_path_beside
from viewer_gateway.envelope import ApiError, InvalidInput, NotFound, TooLarge

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SCREENSHOT_MAX_BYTES = 5 * 1024 * 1024
SCREENSHOT_NAME_RE = re.compile(r"^(i_[0-9a-f]{12})\.png$")
ISSUE_ID_RE = re.compile(r"^i_[0-9a-f]{12}$")
GLOBAL_ID_RE = re.compile(r"^[0-9A-Za-z_$]{22}$")
DEFAULT_AUTHOR = "local-user"


# --- issues ----------------------------------------------------------------------------------------------------


def issue_list(model_id: str):
    return model_get(model_id).issues.order_by("-created_at")


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
    folder.mkdir(parents=True, exist_ok=True)
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
        provenance=(data.get("provenance") or {}).get("source", "UI"),
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
    with transaction.atomic():
        issue = issue_get(model_id, issue_id)
        for field in ("title", "comment", "status"):
            if field in changes:
                setattr(issue, field, changes[field])
        issue.save()
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
    provenance: str = "UI",
) -> dict[str, str]:
    """Sets (or, with "", clears) whitelisted overrides of one element; one change entry per changed field.
    Returns the element's effective overrides. One transaction, serialised per model."""
    if not GLOBAL_ID_RE.match(entity_id or ""):
        raise InvalidInput(f"invalid entity id {entity_id!r}: expected a 22-character IFC GlobalId")
    unknown = sorted(set(fields) - set(OVERRIDE_FIELDS))
    if unknown:
        raise InvalidInput(f"field(s) outside the whitelist: {', '.join(unknown)} (allowed: {', '.join(OVERRIDE_FIELDS)})")
    model_get(model_id)
    with transaction.atomic():
        model = IfcModel.objects.select_for_update().get(pk=model_id)  # concurrent writers queue here
        current = _entity_overrides(model, entity_id)
        for field, value in fields.items():
            effective = current.get(field, element_ifc_value(model.id, entity_id, field))
            if value == "":
                if field not in current:
                    continue
                model.overrides.filter(entity_id=entity_id, field=field).delete()
                del current[field]
            elif value == effective:
                continue
            else:
                Override.objects.update_or_create(
                    model=model, entity_id=entity_id, field=field,
                    defaults={"value": value, "entity_name": entity_name},
                )
                current[field] = value
            ChangeEntry.objects.create(
                model=model, entity_id=entity_id, entity_name=entity_name, field=field,
                old_value=effective, new_value=value, author=author, provenance=provenance,
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


def _undo_steps(model_id: str, steps: int) -> None:
    """Best effort after a failed save: take the migrate's staged edit-calls back and rebuild the product."""
    try:
        for _ in range(steps):
            edit_client.call("POST", f"/models/{model_id}/script/undo")
        edit_client.call("POST", f"/models/{model_id}/script/run")
    except ApiError:
        pass


def overrides_migrate(*, model_id: str, author: str = DEFAULT_AUTHOR, provenance: str = "UI") -> dict:
    """Replays every override as a real script edit (edit-call), then one save with operation migrate.
    Migrated fields lose their override and get a change entry (operation migrate); failed fields keep their override
    and are listed with a reason. Any success queues reconversion."""
    model = model_get(model_id)
    migrated, failed = [], []
    for override in model.overrides.order_by("entity_id", "field"):
        item = {"entityId": override.entity_id, "field": override.field, "value": override.value}
        try:
            _migrate_one(model.id, override)
            migrated.append((override, item))
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
        _undo_steps(model.id, len(migrated))
        reason = f"the migrated script could not be saved: {exc.detail}"
        return {"migrated": [], "failed": failed + [{**item, "reason": reason} for _, item in migrated], "version": None}
    request_conversion(model.id)
    changes = {(c["guid"], c_field["field"]): c_field for c in (saved.get("diff") or {}).get("changed", []) for c_field in c["changes"]}
    with transaction.atomic():
        for override, item in migrated:
            ChangeEntry.objects.create(
                model=model, entity_id=override.entity_id, entity_name=override.entity_name, field=override.field,
                old_value=element_ifc_value(model.id, override.entity_id, override.field), new_value=override.value,
                author=author, provenance=provenance, operation=ChangeEntry.Operation.MIGRATE,
                diff={"version": saved["version"], **changes.get((override.entity_id, override.field), {"field": override.field})},
            )
            override.delete()
    return {"migrated": [item for _, item in migrated], "failed": failed, "version": saved["version"]}
