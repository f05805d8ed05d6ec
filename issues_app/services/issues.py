"""Use cases of the issues: create (with screenshot and viewpoints), update, delete."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction
from django.utils import timezone

from core.errors import Invalid, TooLarge
from core.limits import SCREENSHOT_MAX_BYTES
from accounts_app.audit import audit_record
from accounts_app.models import ProjectMember
from api.principal import Principal
from api.signatures import Signature
from core.provenance import DEFAULT_AUTHOR, Provenance
from issues_app import bcf
from issues_app.issue_files import (
    DOCUMENTS_FOLDER,
    file_batch,
    image_url,
    issue_image_urls,
    issues_folder,
    issues_folder_for_writing,
    remove_unused_images,
    screenshot_of,
    store_file,
    stored_viewpoints,
)
from issues_app.models import Issue
from issues_app.selectors import issue_get
from issues_app.viewpoints import PNG_SIGNATURE, camera_of
from models_app.public import model_dir
from models_app.selectors import model_get, project_of_model

# PATCH field (API name) -> column
TOPIC_FIELDS = {
    "title": "title", "comment": "comment", "status": "status", "topicType": "topic_type", "priority": "priority", "labels": "labels",
    "assignedTo": "assigned_to", "dueDate": "due_date", "stage": "stage", "referenceLinks": "reference_links",
    "relatedTopics": "related_topics", "documentReferences": "document_references", "headerFiles": "bcf_header_files",  # headerFiles: BCF API only
}

CREATE_AUDITED = ("title", "comment", "status", "topic_type", "priority", "labels", "assigned_to", "due_date", "stage")


def _check_screenshot(upload) -> None:
    if upload.size > SCREENSHOT_MAX_BYTES:
        raise TooLarge("screenshot exceeds 5 MB")
    upload.seek(0)
    if upload.read(len(PNG_SIGNATURE)) != PNG_SIGNATURE:
        raise Invalid("screenshot must be a PNG image (the file does not start with the PNG signature)")
    upload.seek(0)


def _store_screenshot(model_id: str, issue_id: str, upload) -> str:
    target = issues_folder_for_writing(model_id) / f"{issue_id}.png"

    def write(handle):
        for chunk in upload.chunks():
            handle.write(chunk)

    store_file(target, write)
    return f"issues/{target.name}"


def _topic_values(data: dict) -> dict:
    """Model fields from validated topic fields (API names)."""
    return {column: data[name] for name, column in TOPIC_FIELDS.items() if name in data and name not in ("title", "comment", "status")}


def assignee_is_member(model_id: str, assigned_to: str) -> bool:
    """Whether an assignee names a member of the model's project by username (else it is free text, for someone
    without an account)."""
    project_id = project_of_model(model_id) if assigned_to else None
    return bool(project_id) and ProjectMember.objects.filter(project_id=project_id, user__username=assigned_to).exists()


def _plain(value):
    """A column's value as the audit trail's JSON keeps it (dates and times in ISO 8601)."""
    return value.isoformat() if hasattr(value, "isoformat") else value


def _audit_issue(by: Principal | None, action: str, issue: Issue, changes: list | None = None) -> None:
    """issue.create / issue.update in the audit trail (the BCF API's topic events read them); changes: [[column, old, new]]."""
    if by is not None:
        plain = [[column, _plain(old), _plain(new)] for column, old, new in changes or ()]
        audit_record(by, action, object=f"issue:{issue.id}", project_id=project_of_model(issue.model_id), detail={"topic_guid": issue.bcf_topic_guid, "changes": plain})


def issue_create(*, model_id: str, data: dict, screenshot=None, signature: Signature | None = None, by: Principal | None = None) -> Issue:
    """data: validated fields (entityId, entityName, entityType, title, comment, author, provenance, camera, the topic
    fields and viewpoints; status and topicGuid from a BCF API client). `by` (who creates) is recorded in the audit trail. `signature`, when given, signs the issue instead of data's author. A screenshot becomes the snapshot of the first viewpoint (which then must have none of its
    own); without a screenshot, a PNG snapshot of the first viewpoint is the screenshot. Without a camera, the first
    viewpoint's camera is the issue's."""
    model = model_get(model_id)
    viewpoints = data.get("viewpoints") or []
    if screenshot is not None:
        _check_screenshot(screenshot)
        if viewpoints and viewpoints[0].get("snapshot"):
            raise Invalid("give the screenshot either as the 'screenshot' part or as the first viewpoint's snapshot, not both")
    issue = Issue(
        model=model,
        entity_id=data.get("entityId", ""),
        entity_name=data.get("entityName", ""),
        entity_type=data.get("entityType", ""),
        title=data["title"],
        comment=data.get("comment", ""),
        author=(signature.author if signature else data.get("author")) or DEFAULT_AUTHOR,
        author_verified=bool(signature and signature.verified),
        provenance=data.get("provenance") or Provenance.UI.value,
        camera=data.get("camera") or (camera_of(viewpoints[0]) if viewpoints else None),
        status=data.get("status") or Issue.Status.OPEN,
        **_topic_values(data),
    )
    issue.assigned_to_member = assignee_is_member(model.id, issue.assigned_to)
    issue.bcf_topic_guid = data.get("topicGuid") or bcf.topic_guid_for(model.id, issue.id)
    with file_batch(model.id, issue.id) as batch:
        with transaction.atomic():
            if screenshot is not None:
                issue.screenshot = _store_screenshot(model.id, issue.id, screenshot)
                batch.created.append(model_dir(model.id) / issue.screenshot)
                if viewpoints:
                    viewpoints[0]["snapshot"] = {"snapshot_type": "png", "snapshot_url": image_url(model.id, f"{issue.id}.png")}
            issue.viewpoints = stored_viewpoints(viewpoints, batch)
            if viewpoints and screenshot is None:
                issue.screenshot = screenshot_of(issue.viewpoints)
            issue.save(force_insert=True)
    _audit_issue(by, "issue.create", issue, [[column, None, getattr(issue, column)] for column in CREATE_AUDITED if getattr(issue, column)])
    return issue


def _check_references(issue: Issue, viewpoints: list[dict] | None, document_references: list[dict] | None) -> None:
    if viewpoints is not None:
        kept = {viewpoint["guid"] for viewpoint in viewpoints}
        orphaned = issue.comments.exclude(viewpoint_guid="").exclude(viewpoint_guid__in=kept).values_list("guid", "viewpoint_guid").first()
        if orphaned:
            raise Invalid(f"viewpoint {orphaned[1]} is referred to by comment {orphaned[0]}: change or delete the comment first")
    for reference in document_references or ():
        if reference.get("documentGuid") and not (issues_folder(issue.model_id) / DOCUMENTS_FOLDER / reference["documentGuid"]).is_file():
            raise Invalid(f"documentReferences: document {reference['documentGuid']} is not stored with this model")


def issue_update(*, model_id: str, issue_id: str, changes: dict, signature: Signature | None = None, by: Principal | None = None) -> Issue:
    """Only the given fields change (row lock, so concurrent changes of other fields survive); nothing given
    changes nothing. A change sets modifiedAt (now) and modifiedAuthor (`signature`, else changes' modifiedAuthor). New viewpoints replace the issue's; images
    no viewpoint keeps are removed."""
    issue_get(model_id, issue_id)
    with file_batch(model_id, issue_id) as batch:
        with transaction.atomic():
            issue = Issue.objects.select_for_update().get(pk=issue_id)
            _check_references(issue, changes.get("viewpoints"), changes.get("documentReferences"))
            images_before = issue_image_urls(issue)
            fields = [column for name, column in TOPIC_FIELDS.items() if name in changes and getattr(issue, column) != changes[name]]
            changed = [[column, getattr(issue, column), changes[name]] for name, column in TOPIC_FIELDS.items() if column in fields]
            for name, column in TOPIC_FIELDS.items():
                if column in fields:
                    setattr(issue, column, changes[name])
            if "assigned_to" in fields:
                issue.assigned_to_member = assignee_is_member(issue.model_id, issue.assigned_to)
                fields.append("assigned_to_member")
            if "viewpoints" in changes:
                viewpoints = changes["viewpoints"]
                if viewpoints and not issue.viewpoints and issue.screenshot and not viewpoints[0].get("snapshot"):
                    viewpoints[0]["snapshot"] = {"snapshot_type": "png", "snapshot_url": image_url(issue.model_id, Path(issue.screenshot).name)}
                viewpoints = stored_viewpoints(viewpoints, batch)
                if viewpoints != issue.viewpoints:
                    issue.viewpoints = viewpoints
                    fields.append("viewpoints")
                    screenshot = screenshot_of(viewpoints) if viewpoints else issue.screenshot
                    if screenshot != issue.screenshot:
                        issue.screenshot = screenshot
                        fields.append("screenshot")
            if fields:
                issue.modified_at = timezone.now()
                issue.modified_author = (signature.author if signature else changes.get("modifiedAuthor")) or DEFAULT_AUTHOR
                issue.modified_author_verified = bool(signature and signature.verified)
                issue.save(update_fields=[*fields, "modified_at", "modified_author", "modified_author_verified", "updated_at"])
                _audit_issue(by, "issue.update", issue, changed)
    remove_unused_images(issue, images_before)
    return issue


def issue_delete(*, model_id: str, issue_id: str, by: Principal | None = None) -> None:
    """Deletes the issue, its comments and images; `by` (who deletes) is recorded in the audit trail."""
    issue = issue_get(model_id, issue_id)
    issue_id, folder = issue.id, issues_folder(issue.model_id)
    issue.delete()
    if by is not None:
        audit_record(by, "issue.delete", object=f"issue:{issue_id}", project_id=project_of_model(issue.model_id), detail={"title": issue.title, "model": issue.model_id})
    for path in [folder / f"{issue_id}.png", *folder.glob(f"{issue_id}-*")]:
        path.unlink(missing_ok=True)
