"""Use cases of the review records: issues with screenshots and viewpoints, their comment threads, property
overrides, the change log, the migration of overrides into the build script and the BCF 3.0 exchange."""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import re
import secrets
import tempfile
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from issues_app import bcf
from issues_app.models import OVERRIDE_FIELDS, ChangeEntry, Comment, Issue, Override, OverrideMigration
from issues_app.selectors import element_bounds, element_ifc_value, element_name_and_type, issue_list_json
from issues_app.viewpoints import GUID_RE, PendingImage, camera_of, image_urls, pending_images, selected_guid
from models_app import edit_client
from models_app.models import IfcModel
from models_app.services import model_get, request_conversion
from models_app.storage import model_dir, publish_file, temp_path_beside
from viewer_gateway.envelope import ApiError, Conflict, InvalidInput, NotFound, TooLarge, UpstreamError
from viewer_gateway.provenance import DEFAULT_AUTHOR, Provenance

logger = logging.getLogger(__name__)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SCREENSHOT_MAX_BYTES = 5 * 1024 * 1024
# issue images: the screenshot i_<12 hex>.png, viewpoint snapshots and bitmaps i_<12 hex>-<12 hex>.png|jpg
IMAGE_NAME_RE = re.compile(r"^(i_[0-9a-f]{12})(?:\.png|-[0-9a-f]{12}\.(?:png|jpg))$")
ISSUE_ID_RE = re.compile(r"^i_[0-9a-f]{12}$")
MIGRATION_STALE_AFTER = timedelta(minutes=15)
COMMENT_MAX_CHARS = 10_000
DOCUMENTS_FOLDER = "documents"
# PATCH field (API name) -> column
TOPIC_FIELDS = {
    "title": "title", "comment": "comment", "status": "status", "topicType": "topic_type", "priority": "priority", "labels": "labels",
    "assignedTo": "assigned_to", "dueDate": "due_date", "stage": "stage", "referenceLinks": "reference_links",
    "relatedTopics": "related_topics", "documentReferences": "document_references",
}


# --- issues ----------------------------------------------------------------------------------------------------


def issue_list(model_id: str):
    return model_get(model_id).issues.order_by("-created_at")


def issue_list_json_data(model_id: str, filters: dict | None = None) -> bytes:
    """The JSON of the model's issues as the API shows them, newest first, optionally filtered (selectors)."""
    return issue_list_json(model_get(model_id).id, filters or {})


def issue_get(model_id: str, issue_id: str) -> Issue:
    model = model_get(model_id)
    if not ISSUE_ID_RE.match(issue_id or ""):
        raise NotFound(f"invalid issue id {issue_id!r}: expected i_ followed by 12 lowercase hex digits")
    try:
        return model.issues.get(pk=issue_id)
    except Issue.DoesNotExist:
        raise NotFound(f"issue {issue_id} not found in model {model.id}") from None


def issues_folder(model_id: str) -> Path:
    return model_dir(model_id) / "issues"


def image_url(model_id: str, file_name: str) -> str:
    return f"/v1/models/{model_id}/issues/{file_name}"


def issue_image_urls(issue: Issue) -> set[str]:
    """URLs of the images the issue has (its viewpoints' snapshots and bitmaps, its screenshot): the ones a PATCH of
    its viewpoints may name instead of sending the data again."""
    urls = image_urls(issue.viewpoints or [])
    if issue.screenshot:
        urls.add(image_url(issue.model_id, Path(issue.screenshot).name))
    return urls


def _image_path(model_id: str, issue_id: str, url: str) -> Path | None:
    """The file behind an image URL of the issue, None when it is not one of its images."""
    prefix = image_url(model_id, "")
    name = url[len(prefix):] if url.startswith(prefix) else ""
    match = IMAGE_NAME_RE.match(name)
    if not match or match.group(1) != issue_id:
        return None
    path = issues_folder(model_id) / name
    return path if path.is_file() else None


def screenshot_file(model_id: str, file_name: str) -> Path:
    """Path of an issue image (screenshot, viewpoint snapshot or bitmap); the name must match the image pattern
    exactly (no path tricks reach the disk)."""
    model = model_get(model_id)
    if not IMAGE_NAME_RE.match(file_name or ""):
        raise NotFound(f"invalid image name {file_name!r}: expected i_<12 hex>.png or i_<12 hex>-<12 hex>.png|jpg")
    path = issues_folder(model.id) / file_name
    if not path.is_file():
        raise NotFound(f"image {file_name} not found")
    return path


def _check_screenshot(upload) -> None:
    if upload.size > SCREENSHOT_MAX_BYTES:
        raise TooLarge("screenshot exceeds 5 MB")
    upload.seek(0)
    if upload.read(len(PNG_SIGNATURE)) != PNG_SIGNATURE:
        raise InvalidInput("screenshot must be a PNG image (the file does not start with the PNG signature)")
    upload.seek(0)


def _issues_folder_for_writing(model_id: str) -> Path:
    folder = issues_folder(model_id)
    try:
        folder.mkdir(exist_ok=True)  # never the model folder itself: a deleted model stays deleted
    except FileNotFoundError:
        raise NotFound(f"model {model_id} not found") from None
    return folder


def _store_file(target: Path, write) -> None:
    staged = temp_path_beside(target)
    try:
        with open(staged, "wb") as handle:
            write(handle)
        publish_file(staged, target)
    finally:
        staged.unlink(missing_ok=True)


def _store_screenshot(model_id: str, issue_id: str, upload) -> str:
    target = _issues_folder_for_writing(model_id) / f"{issue_id}.png"

    def write(handle):
        for chunk in upload.chunks():
            handle.write(chunk)

    _store_file(target, write)
    return f"issues/{target.name}"


class FileBatch:
    """Files a use case writes: removed again when it fails, so a failed request leaves no file behind."""

    def __init__(self, model_id: str, issue_id: str):
        self.model_id, self.issue_id = model_id, issue_id
        self.created: list[Path] = []

    def store_image(self, image: PendingImage) -> str:
        target = _issues_folder_for_writing(self.model_id) / f"{self.issue_id}-{secrets.token_hex(6)}.{image.image_type}"
        self.created.append(target)
        _store_file(target, image.write)
        return image_url(self.model_id, target.name)

    def discard(self) -> None:
        for path in self.created:
            path.unlink(missing_ok=True)


@contextmanager
def _file_batch(model_id: str, issue_id: str):
    batch = FileBatch(model_id, issue_id)
    try:
        yield batch
    except BaseException:
        batch.discard()
        raise


def _stored_viewpoints(viewpoints: list[dict], batch: FileBatch) -> list[dict]:
    """The viewpoints with their new images stored as files of the issue (URLs instead of data)."""
    for viewpoint in viewpoints:
        for entry in pending_images(viewpoint):
            url = batch.store_image(entry.pop("pending"))
            entry["snapshot_url" if "snapshot_type" in entry else "bitmap_url"] = url
    return viewpoints


def _screenshot_of(viewpoints: list[dict]) -> str:
    """The screenshot path of an issue with viewpoints: its first viewpoint's snapshot, when that is a PNG."""
    snapshot = viewpoints[0].get("snapshot") if viewpoints else None
    if snapshot and snapshot["snapshot_type"] == "png":
        return "issues/" + snapshot["snapshot_url"].rsplit("/", 1)[-1]
    return ""


def _remove_unused_images(issue: Issue, before: set[str]) -> None:
    for url in before - issue_image_urls(issue):
        path = _image_path(issue.model_id, issue.id, url)
        if path is not None:
            path.unlink(missing_ok=True)


def _topic_values(data: dict) -> dict:
    """Model fields from validated topic fields (API names)."""
    return {column: data[name] for name, column in TOPIC_FIELDS.items() if name in data and name not in ("title", "comment", "status")}


def issue_create(*, model_id: str, data: dict, screenshot=None) -> Issue:
    """data: validated fields (entityId, entityName, entityType, title, comment, author, provenance, camera, the topic
    fields and viewpoints). A screenshot becomes the snapshot of the first viewpoint (which then must have none of its
    own); without a screenshot, a PNG snapshot of the first viewpoint is the screenshot. Without a camera, the first
    viewpoint's camera is the issue's."""
    model = model_get(model_id)
    viewpoints = data.get("viewpoints") or []
    if screenshot is not None:
        _check_screenshot(screenshot)
        if viewpoints and viewpoints[0].get("snapshot"):
            raise InvalidInput("give the screenshot either as the 'screenshot' part or as the first viewpoint's snapshot, not both")
    issue = Issue(
        model=model,
        entity_id=data.get("entityId", ""),
        entity_name=data.get("entityName", ""),
        entity_type=data.get("entityType", ""),
        title=data["title"],
        comment=data.get("comment", ""),
        author=data.get("author") or DEFAULT_AUTHOR,
        provenance=data.get("provenance") or Provenance.UI.value,
        camera=data.get("camera") or (camera_of(viewpoints[0]) if viewpoints else None),
        **_topic_values(data),
    )
    issue.bcf_topic_guid = bcf.topic_guid_for(model.id, issue.id)
    with _file_batch(model.id, issue.id) as batch:
        with transaction.atomic():
            if screenshot is not None:
                issue.screenshot = _store_screenshot(model.id, issue.id, screenshot)
                batch.created.append(model_dir(model.id) / issue.screenshot)
                if viewpoints:
                    viewpoints[0]["snapshot"] = {"snapshot_type": "png", "snapshot_url": image_url(model.id, f"{issue.id}.png")}
            issue.viewpoints = _stored_viewpoints(viewpoints, batch)
            if viewpoints and screenshot is None:
                issue.screenshot = _screenshot_of(issue.viewpoints)
            issue.save(force_insert=True)
    return issue


def _check_references(issue: Issue, viewpoints: list[dict] | None, document_references: list[dict] | None) -> None:
    if viewpoints is not None:
        kept = {viewpoint["guid"] for viewpoint in viewpoints}
        orphaned = issue.comments.exclude(viewpoint_guid="").exclude(viewpoint_guid__in=kept).values_list("guid", "viewpoint_guid").first()
        if orphaned:
            raise InvalidInput(f"viewpoint {orphaned[1]} is referred to by comment {orphaned[0]}: change or delete the comment first")
    for reference in document_references or ():
        if reference.get("documentGuid") and not (issues_folder(issue.model_id) / DOCUMENTS_FOLDER / reference["documentGuid"]).is_file():
            raise InvalidInput(f"documentReferences: document {reference['documentGuid']} is not stored with this model")


def issue_update(*, model_id: str, issue_id: str, changes: dict) -> Issue:
    """Only the given fields change (row lock, so concurrent changes of other fields survive); nothing given
    changes nothing. A change sets modifiedAt (now) and modifiedAuthor. New viewpoints replace the issue's; images
    no viewpoint keeps are removed."""
    issue_get(model_id, issue_id)
    with _file_batch(model_id, issue_id) as batch:
        with transaction.atomic():
            issue = Issue.objects.select_for_update().get(pk=issue_id)
            _check_references(issue, changes.get("viewpoints"), changes.get("documentReferences"))
            images_before = issue_image_urls(issue)
            fields = [column for name, column in TOPIC_FIELDS.items() if name in changes and getattr(issue, column) != changes[name]]
            for name, column in TOPIC_FIELDS.items():
                if column in fields:
                    setattr(issue, column, changes[name])
            if "viewpoints" in changes:
                viewpoints = changes["viewpoints"]
                if viewpoints and not issue.viewpoints and issue.screenshot and not viewpoints[0].get("snapshot"):
                    viewpoints[0]["snapshot"] = {"snapshot_type": "png", "snapshot_url": image_url(issue.model_id, Path(issue.screenshot).name)}
                viewpoints = _stored_viewpoints(viewpoints, batch)
                if viewpoints != issue.viewpoints:
                    issue.viewpoints = viewpoints
                    fields.append("viewpoints")
                    screenshot = _screenshot_of(viewpoints) if viewpoints else issue.screenshot
                    if screenshot != issue.screenshot:
                        issue.screenshot = screenshot
                        fields.append("screenshot")
            if fields:
                issue.modified_at = timezone.now()
                issue.modified_author = changes.get("modifiedAuthor") or DEFAULT_AUTHOR
                issue.save(update_fields=[*fields, "modified_at", "modified_author", "updated_at"])
    _remove_unused_images(issue, images_before)
    return issue


def issue_delete(*, model_id: str, issue_id: str) -> None:
    issue = issue_get(model_id, issue_id)
    issue_id, folder = issue.id, issues_folder(issue.model_id)
    issue.delete()
    for path in [folder / f"{issue_id}.png", *folder.glob(f"{issue_id}-*")]:
        path.unlink(missing_ok=True)


# --- comments --------------------------------------------------------------------------------------------------


def _comment_lookup(issue: Issue, comment_id: str) -> Comment:
    if not GUID_RE.match(comment_id or ""):
        raise NotFound(f"invalid comment id {comment_id!r}: expected a lowercase UUID (8-4-4-4-12 hex digits)")
    try:
        return issue.comments.get(guid=comment_id)
    except Comment.DoesNotExist:
        raise NotFound(f"comment {comment_id} not found in issue {issue.id}") from None


def _check_viewpoint_guid(issue: Issue, viewpoint_guid: str | None) -> None:
    if viewpoint_guid and viewpoint_guid not in {viewpoint["guid"] for viewpoint in issue.viewpoints or ()}:
        raise InvalidInput(f"viewpointGuid {viewpoint_guid} is not a viewpoint of issue {issue.id}")


def _touch_issue(issue: Issue, author: str | None) -> None:
    """A comment change is a change of the topic: modifiedAt moves (which also refreshes the cached issue list)."""
    issue.modified_at = timezone.now()
    fields = ["modified_at", "updated_at"]
    if author:
        issue.modified_author = author
        fields.append("modified_author")
    issue.save(update_fields=fields)


def _locked_issue(model_id: str, issue_id: str) -> Issue:
    issue_get(model_id, issue_id)
    return Issue.objects.select_for_update().get(pk=issue_id)


def comment_list(model_id: str, issue_id: str):
    return issue_get(model_id, issue_id).comments.order_by("date", "id")


def comment_get(model_id: str, issue_id: str, comment_id: str) -> Comment:
    return _comment_lookup(issue_get(model_id, issue_id), comment_id)


def comment_add(*, model_id: str, issue_id: str, text: str, author: str = DEFAULT_AUTHOR, viewpoint_guid: str | None = None) -> Comment:
    """A new comment at the end of the issue's thread; viewpoint_guid must name one of the issue's viewpoints."""
    if not (text or "").strip():
        raise InvalidInput("text: a comment needs text")
    if len(text) > COMMENT_MAX_CHARS:
        raise InvalidInput(f"text: at most {COMMENT_MAX_CHARS} characters")
    with transaction.atomic():
        issue = _locked_issue(model_id, issue_id)
        _check_viewpoint_guid(issue, viewpoint_guid)
        comment = Comment.objects.create(issue=issue, text=text, author=author or DEFAULT_AUTHOR, viewpoint_guid=viewpoint_guid or "")
        _touch_issue(issue, comment.author)
    return comment


def comment_update(*, model_id: str, issue_id: str, comment_id: str, changes: dict) -> Comment:
    """changes: text, viewpointGuid (None or "" removes the reference), modifiedAuthor. A real change sets
    modifiedDate and modifiedAuthor; nothing given changes nothing."""
    if "text" in changes and not (changes["text"] or "").strip():
        raise InvalidInput("text: a comment needs text")
    if len(changes.get("text") or "") > COMMENT_MAX_CHARS:
        raise InvalidInput(f"text: at most {COMMENT_MAX_CHARS} characters")
    with transaction.atomic():
        issue = _locked_issue(model_id, issue_id)
        comment = _comment_lookup(issue, comment_id)
        if "viewpointGuid" in changes:
            _check_viewpoint_guid(issue, changes["viewpointGuid"])
        fields = []
        if "text" in changes and changes["text"] != comment.text:
            comment.text = changes["text"]
            fields.append("text")
        if "viewpointGuid" in changes and (changes["viewpointGuid"] or "") != comment.viewpoint_guid:
            comment.viewpoint_guid = changes["viewpointGuid"] or ""
            fields.append("viewpoint_guid")
        if fields:
            comment.modified_date = timezone.now()
            comment.modified_author = changes.get("modifiedAuthor") or DEFAULT_AUTHOR
            comment.save(update_fields=[*fields, "modified_date", "modified_author"])
            _touch_issue(issue, comment.modified_author)
    return comment


def comment_delete(*, model_id: str, issue_id: str, comment_id: str) -> None:
    with transaction.atomic():
        issue = _locked_issue(model_id, issue_id)
        _comment_lookup(issue, comment_id).delete()
        _touch_issue(issue, None)


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


def _model_image_path(model_id: str, url: str) -> Path | None:
    match = IMAGE_NAME_RE.match(url.rsplit("/", 1)[-1]) if url.startswith(image_url(model_id, "")) else None
    return _image_path(model_id, match.group(1), url) if match else None


def _document_path(model_id: str, document_guid: str) -> Path:
    return issues_folder(model_id) / DOCUMENTS_FOLDER / document_guid


def _topic_record(issue: Issue, bounds: dict[str, list[float]]) -> bcf.TopicRecord:
    screenshot = model_dir(issue.model_id) / issue.screenshot if issue.screenshot else None
    return bcf.TopicRecord(
        guid=issue.bcf_topic_guid or bcf.topic_guid_for(issue.model_id, issue.id), title=issue.title, status=issue.status,
        creation_author=issue.author, created_at=issue.created_at, description=issue.comment, topic_status=issue.bcf_topic_status,
        topic_type=issue.topic_type, provenance=issue.provenance, priority=issue.priority, labels=list(issue.labels),
        assigned_to=issue.assigned_to, due_date=issue.due_date, stage=issue.stage, reference_links=list(issue.reference_links),
        related_topics=list(issue.related_topics), document_references=list(issue.document_references), header_files=list(issue.bcf_header_files),
        modified_author=issue.modified_author, modified_at=issue.modified_at,
        comments=[
            bcf.CommentRecord(guid=c.guid, author=c.author, date=c.date, text=c.text, viewpoint_guid=c.viewpoint_guid, modified_date=c.modified_date, modified_author=c.modified_author)
            for c in issue.comments.all()
        ],
        viewpoints=issue.viewpoints or [], camera=issue.camera, entity_id=issue.entity_id, entity_bounds=bounds.get(issue.entity_id),
        screenshot=screenshot if screenshot is not None and screenshot.is_file() else None,
    )


def issues_export_bcf(model_id: str):
    """The model's issues as a BCF 3.0 archive: (file name, an open temporary file holding it, at position 0; it is
    deleted when closed)."""
    model = model_get(model_id)
    issues = list(model.issues.order_by("created_at").prefetch_related("comments"))
    documents = {}
    for issue in issues:
        for reference in issue.document_references:
            guid = reference.get("documentGuid")
            if guid and _document_path(model.id, guid).is_file():
                documents[guid] = (reference.get("filename") or guid, reference.get("documentDescription") or "", _document_path(model.id, guid))
    bounds = element_bounds(model.id, {issue.entity_id for issue in issues if issue.entity_id and not issue.viewpoints and not issue.camera})
    handle = tempfile.TemporaryFile(dir=settings.FILE_UPLOAD_TEMP_DIR)
    try:
        bcf.write_bcf_archive(
            handle, project_id=model.id, project_name=model.name or model.id, topics=[_topic_record(issue, bounds) for issue in issues],
            documents=documents, image_file=lambda url: _model_image_path(model.id, url),
        )
        handle.seek(0)
    except BaseException:
        handle.close()
        raise
    return f"{model.id}-issues.bcfzip", handle


def _skip_reason(topic: bcf.TopicRecord) -> str | None:
    if not topic.title:
        return "the topic has no title"
    if len(topic.title) > 512:
        return "the title is longer than 512 characters"
    viewpoint_entity = selected_guid(topic.viewpoints[0]) if topic.viewpoints else ""
    if len(viewpoint_entity) > 64:
        return "the selected component's IfcGuid is longer than 64 characters"
    for name, value in (("TopicType", topic.topic_type), ("Priority", topic.priority), ("AssignedTo", topic.assigned_to), ("Stage", topic.stage),
                        ("CreationAuthor", topic.creation_author), ("ModifiedAuthor", topic.modified_author),
                        *(("a comment's Author", c.author) for c in topic.comments), *(("a comment's ModifiedAuthor", c.modified_author) for c in topic.comments)):
        if len(value) > 255:
            return f"{name} is longer than 255 characters"
    return None


def _issue_values(model: IfcModel, topic: bcf.TopicRecord, viewpoints: list[dict]) -> dict:
    """The issue's fields from a topic (its first viewpoint gives camera, element and screenshot)."""
    entity_id = selected_guid(viewpoints[0]) if viewpoints else ""
    entity_name, entity_type = element_name_and_type(model.id, entity_id) if entity_id else ("", "")
    if not entity_type:
        entity_type = next((label for label in topic.labels if label.startswith("Ifc")), "") if entity_id else ""
    return {
        "entity_id": entity_id, "entity_name": entity_name[:512], "entity_type": entity_type[:128], "title": topic.title, "comment": topic.description,
        "author": topic.creation_author or DEFAULT_AUTHOR, "provenance": topic.provenance, "camera": camera_of(viewpoints[0]) if viewpoints else None,
        "status": topic.status, "bcf_topic_status": topic.topic_status, "topic_type": topic.topic_type, "priority": topic.priority, "labels": topic.labels,
        "assigned_to": topic.assigned_to, "due_date": topic.due_date, "stage": topic.stage, "reference_links": topic.reference_links,
        "related_topics": topic.related_topics, "document_references": topic.document_references, "bcf_header_files": topic.header_files,
        "modified_author": topic.modified_author, "modified_at": topic.modified_at, "created_at": topic.created_at, "viewpoints": viewpoints,
        "screenshot": _screenshot_of(viewpoints),
    }


def _store_documents(model: IfcModel, topic: bcf.TopicRecord, documents: dict, created: list[Path]) -> None:
    """The archive's documents the topic refers to, stored once per model (a document GUID names one document)."""
    for reference in topic.document_references:
        guid = reference.get("documentGuid")
        target = _document_path(model.id, guid) if guid else None
        if target is None or target.is_file():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        created.append(target)
        _store_file(target, documents[guid].write)


def _comment_values(record: bcf.CommentRecord) -> dict:
    return {"author": record.author, "date": record.date, "text": record.text, "viewpoint_guid": record.viewpoint_guid,
            "modified_date": record.modified_date, "modified_author": record.modified_author}


def _issue_from_topic(model: IfcModel, topic: bcf.TopicRecord, batch: FileBatch) -> Issue:
    issue = Issue(model=model, id=batch.issue_id, bcf_topic_guid=topic.guid)
    for name, value in _issue_values(model, topic, _stored_viewpoints(topic.viewpoints, batch)).items():
        setattr(issue, name, value)
    issue.save(force_insert=True)  # updated_at is the import time: the cached issue list relies on every write moving it forward
    Comment.objects.bulk_create([Comment(issue=issue, guid=record.guid, **_comment_values(record)) for record in topic.comments])
    return issue


def _image_digests(model_id: str, viewpoints: list[dict]) -> str:
    """The viewpoints with each image URL replaced by the digest of its file: equal when nothing a user sees differs."""
    def digest(url: str) -> str:
        path = _model_image_path(model_id, url)
        return hashlib.sha256(path.read_bytes()).hexdigest() if path else ""

    copies = []
    for viewpoint in viewpoints:
        copy = dict(viewpoint)
        if copy.get("snapshot"):
            copy["snapshot"] = {**copy["snapshot"], "snapshot_url": digest(copy["snapshot"]["snapshot_url"])}
        copy["bitmaps"] = [{**bitmap, "bitmap_url": digest(bitmap["bitmap_url"])} for bitmap in copy.get("bitmaps") or ()]
        copies.append(copy)
    return json.dumps(copies, sort_keys=True)  # PostgreSQL's jsonb keeps no key order


API_NAMES = {
    "title": "title", "comment": "comment", "status": "status", "author": "creationAuthor", "provenance": "provenance", "topic_type": "topicType",
    "priority": "priority", "labels": "labels", "assigned_to": "assignedTo", "due_date": "dueDate", "stage": "stage",
    "reference_links": "referenceLinks", "related_topics": "relatedTopics", "document_references": "documentReferences",
    "modified_author": "modifiedAuthor", "modified_at": "modifiedAt", "created_at": "createdAt", "entity_id": "entityId", "camera": "camera",
}


def _update_issue_from_topic(model: IfcModel, issue: Issue, topic: bcf.TopicRecord, batch: FileBatch) -> list[str]:
    """The issue takes the topic's fields, viewpoints and comments (added, changed and removed); returns what changed."""
    viewpoints = _stored_viewpoints(topic.viewpoints, batch)
    same_viewpoints = _image_digests(model.id, viewpoints) == _image_digests(model.id, issue.viewpoints or [])
    if same_viewpoints:
        batch.discard()  # keep the files (and URLs) the issue has
        batch.created.clear()
        viewpoints = issue.viewpoints
    values = _issue_values(model, topic, viewpoints)
    changes = [label for name, label in API_NAMES.items() if getattr(issue, name) != values[name]]
    if not same_viewpoints:
        changes.append("viewpoints")
    for name, value in values.items():
        setattr(issue, name, value)
    issue.save()
    existing = {comment.guid: comment for comment in issue.comments.all()}
    for record in topic.comments:
        comment = existing.pop(record.guid, None)
        if comment is None:
            Comment.objects.create(issue=issue, guid=record.guid, **_comment_values(record))
            changes.append(f"comment {record.guid} added")
        elif any(getattr(comment, name) != value for name, value in _comment_values(record).items()):
            Comment.objects.filter(pk=comment.pk).update(**_comment_values(record))
            changes.append(f"comment {record.guid} changed")
    for guid, comment in existing.items():
        comment.delete()
        changes.append(f"comment {guid} removed")
    return changes


def _issue_last_change(issue: Issue) -> datetime.datetime:
    moments = [issue.modified_at or issue.created_at]
    moments += [modified or date for date, modified in issue.comments.values_list("date", "modified_date")]
    return max(moments)


def issues_import_bcf(*, model_id: str, archive) -> dict:
    """Topics of a BCF 3.0 archive (a path, or a seekable binary file) become issues of the model with every
    viewpoint, comment and topic field. A topic the model knows (imported before, or exported from it) updates its
    issue when the topic changed later than the issue (the newest ModifiedDate or comment date of each side), else
    it is skipped with the reason. All or nothing: a bad archive raises 40001 and changes nothing; topics that
    cannot become issues are reported as skipped with the reason."""
    model = model_get(model_id)
    imported, updated, skipped, batches, documents_created, images_before = [], [], [], [], [], []
    try:
        with bcf.open_bcf_archive(archive) as content, transaction.atomic():
            IfcModel.objects.select_for_update().get(pk=model.id)  # one import at a time per model
            known = {guid: issue_id for guid, issue_id in model.issues.values_list("bcf_topic_guid", "id") if guid}
            for topic in content.topics:
                reason = _skip_reason(topic)
                if reason:
                    skipped.append({"topic": topic.guid, "title": topic.title, "reason": reason})
                    continue
                issue = Issue.objects.select_for_update().get(pk=known[topic.guid]) if topic.guid in known else None
                if issue is not None:
                    local, remote = _issue_last_change(issue), topic.last_change()
                    if remote <= local:
                        reason = f"already imported as issue {issue.id}"
                        if remote < local:
                            reason = f"issue {issue.id} changed after the topic (issue {local.isoformat()}, topic {remote.isoformat()})"
                        skipped.append({"topic": topic.guid, "title": topic.title, "reason": reason})
                        continue
                batches.append(batch := FileBatch(model.id, issue.id if issue else Issue().id))
                _store_documents(model, topic, content.documents, documents_created)
                if issue is None:
                    issue = _issue_from_topic(model, topic, batch)
                    known[topic.guid] = issue.id
                    imported.append({"topic": topic.guid, "issueId": issue.id, "title": topic.title, "notes": topic.notes})
                else:
                    images_before.append((issue, issue_image_urls(issue)))
                    changes = _update_issue_from_topic(model, issue, topic, batch)
                    updated.append({"topic": topic.guid, "issueId": issue.id, "title": topic.title, "changes": changes, "notes": topic.notes})
    except BaseException as exc:
        for batch in batches:
            batch.discard()
        for path in documents_created:
            path.unlink(missing_ok=True)
        if isinstance(exc, bcf.BcfArchiveError):
            raise InvalidInput(f"cannot import the BCF archive: {exc}") from None
        raise
    for issue, before in images_before:
        _remove_unused_images(issue, before)
    return {"imported": imported, "updated": updated, "skipped": skipped}
