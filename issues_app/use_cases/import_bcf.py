"""Use case: import a BCF 3.0 archive into a model's issues (new topics become issues, topics changed later than
their issue update it)."""

from __future__ import annotations

import datetime
import hashlib
import json
from os import PathLike
from pathlib import Path
from typing import BinaryIO

from django.db import transaction
from django.utils import timezone

from api.principal import Principal
from api.signatures import Signature, signature_of
from core.errors import Invalid
from core.provenance import DEFAULT_AUTHOR
from issues_app import bcf
from issues_app.issue_files import (
    FileBatch,
    document_path,
    issue_image_urls,
    model_image_path,
    remove_unused_images,
    screenshot_of,
    store_file,
    stored_viewpoints,
)
from issues_app.models import Comment, Issue
from issues_app.selectors import element_name_and_type
from issues_app.viewpoints import camera_of, selected_guid
from models_app.models import IfcModel
from models_app.public import METADATA_FILE, model_file
from models_app.selectors import model_get


def import_bcf(*, model_id: str, archive: str | PathLike | BinaryIO, by: Principal | None = None) -> dict:
    """Topics of a BCF 3.0 archive (a path, or a seekable binary file) become issues of the model with every
    viewpoint, comment and topic field. A topic the model knows (imported before, or exported from it) updates its
    issue when the topic changed later than the issue (the newest ModifiedDate or comment date of each side), else
    it is skipped with the reason. All or nothing: a bad archive raises 40001 and changes nothing; topics that
    cannot become issues are reported as skipped with the reason.

    :param model_id: the model the issues belong to (m_ + 16 hex)
    :param archive: the .bcfzip as a path or a seekable binary file; it is read entry by entry, never whole
    :param by: who imports; an importer with an account signs the changes of known issues and comments (their
        modifiedAuthor, verified). New issues and comments keep the archive's authors, unverified. Whoever imports,
        a verified author is never replaced from the archive, and another person's verified comment is neither
        changed nor removed: the topic's notes say which comment kept its text
    :return: {"imported": [{topic, issueId, title, notes}], "updated": [{topic, issueId, title, changes, notes}],
        "skipped": [{topic, title, reason}], "warnings": [text]}; an archive whose viewpoints' components match no
        element of the model (made for another model) is imported all the same, with a warning, and each topic whose
        viewpoints refer only to elements the model lacks has a note saying so

    Example:

    .. code:: python

        report = import_bcf(model_id="m_0123456789abcdef", archive="/tmp/from-the-architect.bcfzip")
        report["imported"][0]  # {"topic": "0a9b7c3e-...", "issueId": "i_...", "title": "Crack", "notes": []}

        # the same archive again: every topic is known and unchanged, so nothing is written
        again = import_bcf(model_id="m_0123456789abcdef", archive="/tmp/from-the-architect.bcfzip")
        again["skipped"][0]["reason"]  # "already imported as issue i_..."
    """
    model = model_get(model_id)
    importer = signature_of(by) if by is not None and by.has_account else None
    imported, updated, skipped, batches, documents_created, images_before, warnings = [], [], [], [], [], [], []
    try:
        with bcf.open_bcf_archive(archive) as content, transaction.atomic():
            IfcModel.objects.select_for_update().get(pk=model.id)  # one import at a time per model
            warnings += _foreign_elements(model, content.topics)
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
                    changes = _update_issue_from_topic(model, issue, topic, batch, importer)
                    updated.append({"topic": topic.guid, "issueId": issue.id, "title": topic.title, "changes": changes, "notes": topic.notes})
    except BaseException as exc:
        for batch in batches:
            batch.discard()
        for path in documents_created:
            path.unlink(missing_ok=True)
        if isinstance(exc, bcf.BcfArchiveError):
            raise Invalid(f"cannot import the BCF archive: {exc}") from None
        raise
    for issue, before in images_before:
        remove_unused_images(issue, before)
    return {"imported": imported, "updated": updated, "skipped": skipped, "warnings": warnings}


def _component_guids(viewpoints: list[dict]) -> set[str]:
    """The IfcGuids the viewpoints' components (selection, visibility exceptions, colouring) refer to."""
    guids = set()
    for viewpoint in viewpoints:
        components = viewpoint.get("components") or {}
        groups = [components.get("selection"), (components.get("visibility") or {}).get("exceptions"), *(c.get("components") for c in components.get("coloring") or ())]
        guids.update(c["ifc_guid"] for group in groups for c in group or () if c.get("ifc_guid"))
    return guids


def _foreign_elements(model: IfcModel, topics: list[bcf.TopicRecord]) -> list[str]:
    """Notes on the topics whose viewpoints refer only to elements the model lacks, and the archive's warning when
    none of its elements is in the model (nothing to tell before the model's first conversion wrote its metadata)."""
    if not model_file(model.id, METADATA_FILE).is_file():
        return []
    referred, found = set(), set()
    for topic in topics:
        guids = _component_guids(topic.viewpoints)
        present = {guid for guid in guids if element_name_and_type(model.id, guid)[1]}
        referred |= guids
        found |= present
        if guids and not present:
            topic.notes.append(f"none of the {len(guids)} element(s) its viewpoints refer to is in this model: they show no element")
    if referred and not found:
        return [f"none of the {len(referred)} element(s) the archive's viewpoints refer to is in model {model.name or model.id}: was it made for another model?"]
    return []


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


def _issue_last_change(issue: Issue) -> datetime.datetime:
    moments = [issue.modified_at or issue.created_at]
    moments += [modified or date for date, modified in issue.comments.values_list("date", "modified_date")]
    return max(moments)


def _store_documents(model: IfcModel, topic: bcf.TopicRecord, documents: dict, created: list[Path]) -> None:
    """The archive's documents the topic refers to, stored once per model (a document GUID names one document)."""
    for reference in topic.document_references:
        guid = reference.get("documentGuid")
        target = document_path(model.id, guid) if guid else None
        if target is None or target.is_file():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        created.append(target)
        store_file(target, documents[guid].write)


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
        "screenshot": screenshot_of(viewpoints),
    }


def _comment_values(record: bcf.CommentRecord) -> dict:
    return {"author": record.author, "date": record.date, "text": record.text, "viewpoint_guid": record.viewpoint_guid,
            "modified_date": record.modified_date, "modified_author": record.modified_author}


def _issue_from_topic(model: IfcModel, topic: bcf.TopicRecord, batch: FileBatch) -> Issue:
    issue = Issue(model=model, id=batch.issue_id, bcf_topic_guid=topic.guid)
    for name, value in _issue_values(model, topic, stored_viewpoints(topic.viewpoints, batch)).items():
        setattr(issue, name, value)
    issue.save(force_insert=True)  # updated_at is the import time: the cached issue list relies on every write moving it forward
    Comment.objects.bulk_create([Comment(issue=issue, guid=record.guid, **_comment_values(record)) for record in topic.comments])
    return issue


API_NAMES = {
    "title": "title", "comment": "comment", "status": "status", "author": "creationAuthor", "provenance": "provenance", "topic_type": "topicType",
    "priority": "priority", "labels": "labels", "assigned_to": "assignedTo", "due_date": "dueDate", "stage": "stage",
    "reference_links": "referenceLinks", "related_topics": "relatedTopics", "document_references": "documentReferences",
    "modified_author": "modifiedAuthor", "modified_at": "modifiedAt", "created_at": "createdAt", "entity_id": "entityId", "camera": "camera",
}


def _update_issue_from_topic(model: IfcModel, issue: Issue, topic: bcf.TopicRecord, batch: FileBatch, importer: Signature | None) -> list[str]:
    """The issue takes the topic's fields, viewpoints and comments (added, changed and removed); returns what changed.
    A verified author and creation date stay; the importer (when it has an account) is the modified author."""
    viewpoints = stored_viewpoints(topic.viewpoints, batch)
    same_viewpoints = _image_digests(model.id, viewpoints) == _image_digests(model.id, issue.viewpoints or [])
    if same_viewpoints:
        batch.discard()  # keep the files (and URLs) the issue has
        batch.created.clear()
        viewpoints = issue.viewpoints
    values = _issue_values(model, topic, viewpoints)
    if issue.author_verified:
        values.update(author=issue.author, created_at=issue.created_at)
    if importer:
        values["modified_author"] = importer.author
    modifier_verified = importer.verified if importer else issue.modified_author_verified and values["modified_author"] == issue.modified_author
    changes = [label for name, label in API_NAMES.items() if getattr(issue, name) != values[name]]
    if not same_viewpoints:
        changes.append("viewpoints")
    for name, value in values.items():
        setattr(issue, name, value)
    issue.modified_author_verified = modifier_verified
    issue.save()
    return changes + _update_comments(issue, topic, importer)


COMMENT_CONTENT = ("text", "viewpoint_guid")


def _update_comments(issue: Issue, topic: bcf.TopicRecord, importer: Signature | None) -> list[str]:
    """The issue's comments become the topic's (added, changed, removed), except that a verified comment changes only
    by its author: another person's is neither changed nor removed, and the topic's notes say so."""
    changes = []
    existing = {comment.guid: comment for comment in issue.comments.all()}
    for record in topic.comments:
        comment = existing.pop(record.guid, None)
        if comment is None:
            Comment.objects.create(issue=issue, guid=record.guid, **_comment_values(record))
            changes.append(f"comment {record.guid} added")
            continue
        content = {name: value for name, value in _comment_values(record).items() if not name.startswith("modified_")}
        if comment.author_verified:
            content = {name: content[name] for name in COMMENT_CONTENT}  # a verified comment keeps its author and date
        modification = _comment_modification(record, importer)
        unchanged = all(getattr(comment, name) == value for name, value in content.items())
        if importer is None and not comment.author_verified:  # the archive's word on who modified it is a change too
            unchanged = unchanged and all(getattr(comment, name) == modification[name] for name in ("modified_date", "modified_author"))
        if unchanged:
            continue
        if comment.author_verified and not _is_own(comment, importer):
            topic.notes.append(f"comment {record.guid} by {comment.author} not changed: only its author changes it")
            continue
        Comment.objects.filter(pk=comment.pk).update(**content, **modification)
        changes.append(f"comment {record.guid} changed")
    for guid, comment in existing.items():
        if comment.author_verified and not _is_own(comment, importer):
            topic.notes.append(f"comment {guid} by {comment.author} kept: an import removes no one else's comment")
            continue
        comment.delete()
        changes.append(f"comment {guid} removed")
    return changes


def _is_own(comment: Comment, importer: Signature | None) -> bool:
    return importer is not None and importer.verified and importer.author == comment.author


def _comment_modification(record: bcf.CommentRecord, importer: Signature | None) -> dict:
    """Who changed a known comment: the importer with an account (verified), else the archive's word."""
    if importer is None:
        return {"modified_date": record.modified_date, "modified_author": record.modified_author, "modified_author_verified": False}
    return {"modified_date": record.modified_date or timezone.now(), "modified_author": importer.author, "modified_author_verified": importer.verified}


def _image_digests(model_id: str, viewpoints: list[dict]) -> str:
    """The viewpoints with each image URL replaced by the digest of its file: equal when nothing a user sees differs."""
    def digest(url: str) -> str:
        path = model_image_path(model_id, url)
        return hashlib.sha256(path.read_bytes()).hexdigest() if path else ""

    copies = []
    for viewpoint in viewpoints:
        copy = dict(viewpoint)
        if copy.get("snapshot"):
            copy["snapshot"] = {**copy["snapshot"], "snapshot_url": digest(copy["snapshot"]["snapshot_url"])}
        copy["bitmaps"] = [{**bitmap, "bitmap_url": digest(bitmap["bitmap_url"])} for bitmap in copy.get("bitmaps") or ()]
        copies.append(copy)
    return json.dumps(copies, sort_keys=True)  # PostgreSQL's jsonb keeps no key order
