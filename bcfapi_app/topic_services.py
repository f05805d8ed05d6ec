"""Use cases of the BCF API on topics and what hangs under them, each one written through issues_app's services so
that a topic changed here is the same issue changed in the web client (signature, audit trail, modifiedAt).

The request bodies are BCF API JSON (topic_POST/PUT, comment_POST/PUT, viewpoint_POST, file_PUT, related_topic_PUT,
document_reference_POST/PUT); they are translated to the issue API's names and checked by its serializers, so the
limits are the same on both sides.
"""

from __future__ import annotations

import re
import uuid

from django.db import transaction
from rest_framework.exceptions import ValidationError

from accounts_app.policy import Forbidden
from api.principal import Principal
from api.signatures import signature_of
from api.views import validated
from bcfapi_app import topics
from bcfapi_app.authorization import ProjectActions
from bcfapi_app.documents import document_into_model
from core.errors import Conflict, Invalid, NotFound
from issues_app import bcf, services
from issues_app.models import DEFAULT_TOPIC_TYPE, Comment, Issue
from issues_app.serializers import (
    DocumentReferenceSerializer,
    IssueInputSerializer,
    IssuePatchSerializer,
)
from issues_app.viewpoints import ViewpointError, clean_viewpoint

UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
TOPIC_KEYS = {"guid", "topic_type", "topic_status", "reference_links", "title", "priority", "index", "labels", "assigned_to", "stage",
              "description", "bim_snippet", "due_date"}
# topic_PUT/POST key -> (issue API name, its empty value)
TOPIC_FIELDS = {
    "title": ("title", ""), "description": ("comment", ""), "topic_type": ("topicType", DEFAULT_TOPIC_TYPE), "priority": ("priority", ""),
    "labels": ("labels", []), "assigned_to": ("assignedTo", ""), "due_date": ("dueDate", None), "stage": ("stage", ""),
    "reference_links": ("referenceLinks", []),
}


def _known_keys(body, allowed: set[str], what: str) -> dict:
    if not isinstance(body, dict):
        raise Invalid(f"the body must be a JSON object ({what})")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise Invalid(f"{unknown[0]}: not a property of {what}", data={"field": unknown[0]})
    return body


def check_guid(value, field: str) -> str | None:
    """A client-given GUID (an RFC 4122 UUID in any case) in lowercase, as BCF imports and the issue API keep them;
    None when none is given."""
    if value is None:
        return None
    if not isinstance(value, str) or not UUID_RE.match(value):
        raise Invalid(f"{field}: {value!r} is not a GUID (8-4-4-4-12 hex digits)", data={"field": field})
    return value.lower()


def _issue_fields(body: dict) -> dict:
    """topic_PUT/POST -> the issue API's fields, every field given (absent or null -> empty, a whole replace);
    provenance:<origin> labels are read-only and dropped; `index` (deprecated) is ignored; a BIM snippet is refused
    (not kept: the extensions' snippet_type is empty)."""
    if body.get("bim_snippet") is not None:
        raise Invalid("bim_snippet: BIM snippets are not supported by this server (extensions: snippet_type is empty)", data={"field": "bim_snippet"})
    fields = {}
    for key, (name, empty) in TOPIC_FIELDS.items():
        value = body.get(key)
        fields[name] = empty if value is None else value
    if isinstance(fields["labels"], list):
        fields["labels"] = [label for label in fields["labels"] if not (isinstance(label, str) and label.startswith(bcf.PROVENANCE_LABEL_PREFIX))]
    return fields


def _validated_as(serializer, data: dict, names: dict[str, str]) -> dict:
    """The issue API serializer's validated data; its first error raised as Invalid naming the BCF API field
    (`names`: issue API name -> BCF API name)."""
    try:
        return validated(serializer, data)
    except ValidationError as exc:
        detail = exc.detail
        name, messages = next(iter(detail.items())) if isinstance(detail, dict) else ("body", detail)
        key = names.get(name, name)
        message = messages[0] if isinstance(messages, list) and messages else messages
        if isinstance(message, dict):  # a nested serializer's errors
            message = next(iter(message.values()))[0]
        raise Invalid(f"{key}: {message}", data={"field": key}) from None


TOPIC_NAMES = {api_name: key for key, (api_name, _) in TOPIC_FIELDS.items()}
REFERENCE_NAMES = {"documentGuid": "document_guid", "non_field_errors": "document_reference"}


def _status(project_id: str, value) -> tuple[str, str]:
    """(issue status, stored BCF topic status) of a topic_status: one of the project's statuses (extensions)."""
    value = "Open" if value is None else value
    allowed = topics.topic_statuses(project_id)
    if value not in allowed:
        raise Invalid(f"topic_status: {value!r} is not one of {', '.join(allowed)}", data={"field": "topic_status"})
    return bcf.issue_status(value), "" if value in topics.STANDARD_STATUSES else value


def _keep_status(issue: Issue, stored: str) -> None:
    if issue.bcf_topic_status != stored:
        Issue.objects.filter(pk=issue.pk).update(bcf_topic_status=stored)
        issue.bcf_topic_status = stored


def topic_create(*, project_id: str, body, principal: Principal) -> Issue:
    """POST topics: a new issue on the project's first IFC model, with the client's GUID when it gives one (409 when
    the project has it already)."""
    body = _known_keys(body, TOPIC_KEYS, "topic_POST")
    model = topics.primary_model(project_id)
    if model is None:
        raise Forbidden(f"project {project_id} has no IFC model to hold topics (createTopic is not among its project_actions)")
    guid = check_guid(body.get("guid"), "guid")
    if guid and topics.project_issues(project_id).filter(bcf_topic_guid__iexact=guid).exists():
        raise Conflict(f"topic {guid} exists already in project {project_id}", data={"field": "guid"})
    status, stored_status = _status(project_id, body.get("topic_status"))
    data = _validated_as(IssueInputSerializer, {**_issue_fields(body), "author": principal.name}, TOPIC_NAMES)
    data.update(status=status, topicGuid=guid or str(uuid.uuid4()))
    with transaction.atomic():
        issue = services.issue_create(model_id=model.id, data=data, signature=signature_of(principal), by=principal)
        _keep_status(issue, stored_status)
    return issue


def topic_replace(*, project_id: str, issue: Issue, body, principal: Principal) -> Issue:
    """PUT topic: a whole replace of the topic's fields (an absent optional field becomes empty)."""
    body = _known_keys(body, TOPIC_KEYS - {"guid"}, "topic_PUT")
    status, stored_status = _status(project_id, body.get("topic_status", bcf.bcf_status(issue.status, issue.bcf_topic_status)))
    changes = _validated_as(IssuePatchSerializer, _issue_fields(body), TOPIC_NAMES)
    changes["status"] = status
    with transaction.atomic():
        updated = _update(issue, changes, principal)
        _keep_status(updated, stored_status)
    return updated


def topic_delete(*, issue: Issue, principal: Principal) -> None:
    services.issue_delete(model_id=issue.model_id, issue_id=issue.id, by=principal)


# --- files, related topics, document references ----------------------------------------------------------------


def topic_files(issue: Issue) -> list[dict]:
    """file_GET of the topic's header files."""
    return [
        {"ifc_project": item.get("ifcProject"), "ifc_spatial_structure_element": item.get("ifcSpatialStructureElement"),
         "filename": item.get("filename"), "date": item.get("date"), "reference": item.get("reference")}
        for item in issue.bcf_header_files or ()
    ]


def topic_files_replace(*, issue: Issue, body, known: list[dict], principal: Principal) -> Issue:
    """PUT files: file references from files_information (`known`), or ones the topic has already (an imported
    header names files of other servers)."""
    if not isinstance(body, list) or len(body) > 100:
        raise Invalid("the body must be a list of at most 100 file references")
    accepted = {item["reference"] for item in known} | {item.get("reference") for item in issue.bcf_header_files or ()}
    files = []
    for index, item in enumerate(body):
        _known_keys(item, {"ifc_project", "ifc_spatial_structure_element", "filename", "date", "reference"}, f"file_PUT [{index}]")
        if item.get("reference") not in accepted:
            raise Invalid(f"[{index}].reference: {item.get('reference')!r} is not a file of files_information", data={"field": "reference"})
        if any(value is not None and not isinstance(value, str) for value in item.values()):
            raise Invalid(f"[{index}]: values must be strings or null")
        files.append({"filename": item.get("filename"), "date": item.get("date"), "reference": item.get("reference"),
                      "ifcProject": item.get("ifc_project"), "ifcSpatialStructureElement": item.get("ifc_spatial_structure_element")})
    return _update(issue, {"headerFiles": files}, principal)


def related_topics_replace(*, project_id: str, issue: Issue, body, principal: Principal) -> Issue:
    """PUT related_topics: GUIDs of other topics of the project (400 naming one that is not)."""
    if not isinstance(body, list) or len(body) > 1000:
        raise Invalid("the body must be a list of at most 1000 related topics")
    guids = []
    for index, item in enumerate(body):
        _known_keys(item, {"related_topic_guid"}, f"related_topic_PUT [{index}]")
        guid = check_guid(item.get("related_topic_guid"), f"[{index}].related_topic_guid")
        if guid is None:
            raise Invalid(f"[{index}].related_topic_guid is required", data={"field": "related_topic_guid"})
        known = topics.project_issues(project_id).filter(bcf_topic_guid__iexact=guid).values_list("bcf_topic_guid", flat=True).first()
        if known is None or known == issue.bcf_topic_guid:
            raise Invalid(f"[{index}].related_topic_guid: {guid} is not another topic of project {project_id}", data={"field": "related_topic_guid"})
        guids.append(known)
    return _update(issue, {"relatedTopics": list(dict.fromkeys(guids))}, principal)


def _update(issue: Issue, changes: dict, principal: Principal) -> Issue:
    return services.issue_update(model_id=issue.model_id, issue_id=issue.id, changes=changes, signature=signature_of(principal), by=principal)


def document_reference_json(reference: dict) -> dict:
    """document_reference_GET of a stored reference."""
    return {"guid": reference["guid"], "document_guid": reference.get("documentGuid"), "url": reference.get("url"),
            "description": reference.get("description")}


def _document_reference(project_id: str, issue: Issue, body, guid: str, allowed: set[str], what: str) -> dict:
    body = _known_keys(body, allowed, what)
    document_guid = check_guid(body.get("document_guid"), "document_guid")
    reference = {"guid": guid, "url": body.get("url"), "documentGuid": document_guid, "description": body.get("description")}
    if document_guid:
        reference.update(document_into_model(project_id, document_guid, issue.model_id))
    return _validated_as(DocumentReferenceSerializer, reference, REFERENCE_NAMES)


def document_reference_add(*, project_id: str, issue: Issue, body, principal: Principal) -> dict:
    """POST document_references: a URL or a project document (document_guid), with an optional description."""
    guid = check_guid(body.get("guid") if isinstance(body, dict) else None, "guid") or str(uuid.uuid4())
    if any(reference["guid"].lower() == guid.lower() for reference in issue.document_references):
        raise Conflict(f"document reference {guid} exists already in topic {issue.bcf_topic_guid}", data={"field": "guid"})
    reference = _document_reference(project_id, issue, body, guid, {"guid", "document_guid", "url", "description"}, "document_reference_POST")
    _update(issue, {"documentReferences": [*issue.document_references, reference]}, principal)
    return reference


def _reference_index(issue: Issue, reference_guid: str) -> int:
    """Where the topic keeps the document reference `reference_guid` (GUIDs compared without case); NotFound otherwise."""
    for index, reference in enumerate(issue.document_references):
        if reference["guid"].lower() == reference_guid.lower():
            return index
    raise NotFound(f"document reference {reference_guid} not found in topic {issue.bcf_topic_guid}")


def document_reference_get(issue: Issue, reference_guid: str) -> dict:
    """The stored document reference `reference_guid` of the topic; NotFound otherwise."""
    return issue.document_references[_reference_index(issue, reference_guid)]


def document_reference_replace(*, project_id: str, issue: Issue, reference_guid: str, body, principal: Principal) -> dict:
    """PUT document_references/{guid}: the reference replaced as a whole."""
    references = list(issue.document_references)
    index = _reference_index(issue, reference_guid)
    references[index] = _document_reference(project_id, issue, body, references[index]["guid"], {"document_guid", "url", "description"}, "document_reference_PUT")
    _update(issue, {"documentReferences": references}, principal)
    return references[index]


# --- comments -----------------------------------------------------------------------------------------------


def _viewpoint_guid(issue: Issue, value) -> str:
    """A comment's viewpoint_guid: one of the topic's viewpoints (as it stores the GUID), "" for none."""
    guid = check_guid(value, "viewpoint_guid")
    if not guid:
        return ""
    try:
        return topics.viewpoint_get(issue, guid)["guid"]
    except NotFound:
        raise Invalid(f"viewpoint_guid: {guid} is not a viewpoint of topic {issue.bcf_topic_guid}", data={"field": "viewpoint_guid"}) from None


def _comment_text(body: dict) -> str:
    text = body.get("comment")
    if not isinstance(text, str) or not text.strip():
        raise Invalid("comment: a comment needs text", data={"field": "comment"})
    if len(text) > services.COMMENT_MAX_CHARS:
        raise Invalid(f"comment: at most {services.COMMENT_MAX_CHARS} characters", data={"field": "comment"})
    return text


def comment_create(*, issue: Issue, body, principal: Principal) -> Comment:
    """POST comments: a comment with an optional viewpoint; a client's comment GUID is kept (409 when the topic has it)."""
    body = _known_keys(body, {"guid", "comment", "viewpoint_guid"}, "comment_POST")
    guid = check_guid(body.get("guid"), "guid")
    if guid and issue.comments.filter(guid__iexact=guid).exists():
        raise Conflict(f"comment {guid} exists already in topic {issue.bcf_topic_guid}", data={"field": "guid"})
    with transaction.atomic():
        comment = services.comment_add(model_id=issue.model_id, issue_id=issue.id, text=_comment_text(body), viewpoint_guid=_viewpoint_guid(issue, body.get("viewpoint_guid")),
                                       signature=signature_of(principal), by=principal)
        if guid:
            Comment.objects.filter(pk=comment.pk).update(guid=guid)
            comment.guid = guid
    return comment


def check_comment_writable(principal: Principal, project_id: str, comment: Comment) -> None:
    if "update" not in topics.comment_actions(principal, ProjectActions.of(principal, project_id), comment):
        raise Forbidden(f"comment {comment.guid} is signed by {comment.author}: only they may change or delete it")


def comment_replace(*, project_id: str, issue: Issue, comment: Comment, body, principal: Principal) -> Comment:
    """PUT comment: its text and viewpoint replaced."""
    check_comment_writable(principal, project_id, comment)
    body = _known_keys(body, {"comment", "viewpoint_guid"}, "comment_PUT")
    changes = {"text": _comment_text(body), "viewpointGuid": _viewpoint_guid(issue, body.get("viewpoint_guid"))}
    return services.comment_update(model_id=issue.model_id, issue_id=issue.id, comment_id=comment.guid, changes=changes,
                                   signature=signature_of(principal), by=principal)


def comment_remove(*, project_id: str, issue: Issue, comment: Comment, principal: Principal) -> None:
    check_comment_writable(principal, project_id, comment)
    services.comment_delete(model_id=issue.model_id, issue_id=issue.id, comment_id=comment.guid, by=principal)


# --- viewpoints (immutable) -----------------------------------------------------------------------------------


def viewpoint_create(*, issue: Issue, body, principal: Principal) -> dict:
    """POST viewpoints: the viewpoint checked as the issue API checks one (images as base64 data), appended."""
    if not isinstance(body, dict):
        raise Invalid("the body must be a JSON object (viewpoint_POST)")
    body = {key: value for key, value in body.items() if key != "index"}
    body["guid"] = check_guid(body.get("guid"), "guid")
    if body["guid"] and topics.viewpoint_find(issue, body["guid"]) is not None:
        raise Conflict(f"viewpoint {body['guid']} exists already in topic {issue.bcf_topic_guid}", data={"field": "guid"})
    try:
        viewpoint = clean_viewpoint(body, "viewpoint", set(), lambda: str(uuid.uuid4()))
    except ViewpointError as exc:
        raise Invalid(str(exc).removeprefix("viewpoint."), data={"field": str(exc).split(":")[0].removeprefix("viewpoint.")}) from None
    updated = _update(issue, {"viewpoints": [*issue.viewpoints, viewpoint]}, principal)
    return topics.viewpoint_get(updated, viewpoint["guid"])


def viewpoint_remove(*, issue: Issue, viewpoint_guid: str, principal: Principal) -> None:
    """DELETE viewpoint: 409 while a comment refers to it."""
    viewpoint = topics.viewpoint_get(issue, viewpoint_guid)
    comment = issue.comments.filter(viewpoint_guid__iexact=viewpoint["guid"]).first()
    if comment is not None:
        raise Conflict(f"viewpoint {viewpoint['guid']} is referred to by comment {comment.guid}: change or delete the comment first")
    _update(issue, {"viewpoints": [item for item in issue.viewpoints if item["guid"] != viewpoint["guid"]]}, principal)

