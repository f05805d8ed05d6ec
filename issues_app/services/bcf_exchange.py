"""BCF 3.0 exchange, the export side: the model's issues as a .bcfzip archive. The import is
issues_app.use_cases.import_bcf."""

from __future__ import annotations

import tempfile

from django.conf import settings

from issues_app import bcf
from issues_app.issue_files import document_path, model_image_path
from issues_app.models import Issue
from issues_app.selectors import element_bounds
from models_app.public import model_dir
from models_app.selectors import model_get


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
            if guid and document_path(model.id, guid).is_file():
                documents[guid] = (reference.get("filename") or guid, reference.get("documentDescription") or "", document_path(model.id, guid))
    bounds = element_bounds(model.id, {issue.entity_id for issue in issues if issue.entity_id and not issue.viewpoints and not issue.camera})
    handle = tempfile.TemporaryFile(dir=settings.FILE_UPLOAD_TEMP_DIR)
    try:
        bcf.write_bcf_archive(
            handle, project_id=model.id, project_name=model.name or model.id, topics=[_topic_record(issue, bounds) for issue in issues],
            documents=documents, image_file=lambda url: model_image_path(model.id, url),
        )
        handle.seek(0)
    except BaseException:
        handle.close()
        raise
    return f"{model.id}-issues.bcfzip", handle
