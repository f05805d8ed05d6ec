"""A project's topics are the issues of its models (docs/decisions/0010 section 4): the one selector of that mapping,
and how an issue, its comments and viewpoints read as BCF API 3.0 JSON (topic_GET, comment_GET, viewpoint_GET).

One topic is one issue: `guid` is the issue's BCF topic GUID (the one its BCF-XML export writes), `server_assigned_id`
the issue id. Dates are ISO 8601 UTC with Z; an empty text field reads null; a label "provenance:<origin>" is added
(read-only) for an issue not made in the web client, as the export does.
"""

from __future__ import annotations

import datetime
import uuid

from api.principal import Principal
from bcfapi_app.authorization import ProjectActions
from core.errors import NotFound
from issues_app import bcf
from issues_app.models import Comment, Issue
from models_app.models import IfcModel
from models_app.selectors import project_get, project_model_of_format

UTC = datetime.timezone.utc
STANDARD_STATUSES = tuple(bcf.STATUS_TO_BCF.values())


def iso(moment: datetime.datetime | None) -> str | None:
    """ISO 8601 in UTC with Z (milliseconds when there are any), None for none."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds" if moment.microsecond else "seconds").replace("+00:00", "Z")


# --- selectors ---------------------------------------------------------------------------------------------------


def project_issues(project_id: str):
    """The issues of the project's models (models in the trash left out): its topics."""
    project_get(project_id)
    return Issue.objects.filter(model__project_link__project_id=project_id, model__deleted_at__isnull=True)


def topic_get(project_id: str, topic_guid: str) -> Issue:
    """The issue behind a topic GUID of the project (GUIDs compared without case); NotFound otherwise."""
    issue = project_issues(project_id).filter(bcf_topic_guid__iexact=topic_guid).select_related("model").first()
    if issue is None:
        raise NotFound(f"topic {topic_guid} not found in project {project_id}")
    return issue


def comment_get(issue: Issue, comment_guid: str) -> Comment:
    comment = issue.comments.filter(guid__iexact=comment_guid).first()
    if comment is None:
        raise NotFound(f"comment {comment_guid} not found in topic {issue.bcf_topic_guid}")
    return comment


def viewpoint_find(issue: Issue, viewpoint_guid: str) -> dict | None:
    """The topic's viewpoint of that GUID in any case (as every GUID of the API compares), or None."""
    return next((viewpoint for viewpoint in issue.viewpoints or () if viewpoint["guid"].lower() == viewpoint_guid.lower()), None)


def viewpoint_get(issue: Issue, viewpoint_guid: str) -> dict:
    viewpoint = viewpoint_find(issue, viewpoint_guid)
    if viewpoint is None:
        raise NotFound(f"viewpoint {viewpoint_guid} not found in topic {issue.bcf_topic_guid}")
    return viewpoint


def primary_model(project_id: str) -> IfcModel | None:
    """Where new topics of the project go: its first IFC model; None for a project without one."""
    return project_model_of_format(project_get(project_id), IfcModel.Format.IFC)


def topic_statuses(project_id: str) -> list[str]:
    """The statuses a topic may take: Open, In Progress, Resolved and the imported ones the project's topics use."""
    imported = project_issues(project_id).exclude(bcf_topic_status="").values_list("bcf_topic_status", flat=True).distinct()
    return [*STANDARD_STATUSES, *sorted(set(imported) - set(STANDARD_STATUSES))]


# --- authorization per entity (includeAuthorization=true) -----------------------------------------------------------


def topic_authorization(actions: ProjectActions, statuses: list[str]) -> dict:
    """A topic's `authorization`: the caller's topic actions and, when it may update topics, the statuses."""
    return {"topic_actions": actions.topic, "topic_status": statuses if "update" in actions.topic else []}


def comment_actions(principal: Principal, actions: ProjectActions, comment: Comment) -> list[str]:
    """The role's comment actions (`actions`: the caller's in the project), none on another person's verified
    comment (a signed record stays theirs)."""
    if comment.author_verified and comment.author != principal.name and not principal.is_admin:
        return []
    return actions.comment


def viewpoint_actions(actions: ProjectActions, issue: Issue, viewpoint_guid: str) -> list[str]:
    """The role's viewpoint actions, none while a comment points at the viewpoint (it cannot be deleted then)."""
    if issue.comments.filter(viewpoint_guid=viewpoint_guid).exists():
        return []
    return actions.viewpoint


def wants_authorization(request) -> bool:
    return request.query_params.get("includeAuthorization", "").lower() == "true"


# --- issue -> BCF API JSON -------------------------------------------------------------------------------------


def _or_none(value: str) -> str | None:
    return value if value else None


def topic_labels(issue: Issue) -> list[str]:
    """The issue's labels and, for an issue not made in the web client, provenance:<origin> (as the export writes)."""
    provenance = [bcf.PROVENANCE_LABEL_PREFIX + issue.provenance] if issue.provenance != bcf.DEFAULT_PROVENANCE else []
    return [*issue.labels, *provenance]


def topic_json(issue: Issue) -> dict:
    """topic_GET of an issue (without `authorization`); keys with no value are left out where the schema wants a
    string."""
    topic = {
        "guid": issue.bcf_topic_guid, "server_assigned_id": issue.id, "topic_type": issue.topic_type,
        "topic_status": bcf.bcf_status(issue.status, issue.bcf_topic_status), "reference_links": list(issue.reference_links),
        "title": issue.title, "priority": _or_none(issue.priority), "labels": topic_labels(issue),
        "creation_date": iso(issue.created_at), "creation_author": issue.author,
        "assigned_to": _or_none(issue.assigned_to), "stage": _or_none(issue.stage), "description": _or_none(issue.comment),
        "due_date": iso(issue.due_date),
    }
    if issue.modified_at is not None:
        topic["modified_date"] = iso(issue.modified_at)
        topic["modified_author"] = _or_none(issue.modified_author)
    return topic


def comment_json(comment: Comment, topic_guid: str) -> dict:
    """comment_GET of a comment (without `authorization`)."""
    answer = {
        "guid": comment.guid, "date": iso(comment.date), "author": comment.author, "comment": comment.text, "topic_guid": topic_guid,
        "viewpoint_guid": _or_none(comment.viewpoint_guid),
    }
    if comment.modified_date is not None:
        answer.update(modified_date=iso(comment.modified_date), modified_author=_or_none(comment.modified_author))
    return answer


def bitmap_guid(viewpoint_guid: str, index: int) -> str:
    """A bitmap's GUID: derived from its viewpoint and place (viewpoints never change, so it is stable)."""
    return str(uuid.uuid5(uuid.UUID(viewpoint_guid), str(index)))


def bitmap_json(viewpoint: dict, index: int) -> dict:
    bitmap = viewpoint["bitmaps"][index]
    return {"guid": bitmap_guid(viewpoint["guid"], index), "bitmap_type": bitmap["bitmap_type"],
            **{key: bitmap[key] for key in ("location", "normal", "up", "height")}}


def viewpoint_json(viewpoint: dict) -> dict:
    """viewpoint_GET of a stored viewpoint: without its components (they have their own routes), the snapshot as its
    type, bitmaps with their GUID and no URL."""
    answer = {"guid": viewpoint["guid"]}
    for key in ("perspective_camera", "orthogonal_camera"):
        if viewpoint.get(key) is not None:
            answer[key] = viewpoint[key]
    answer["lines"] = viewpoint.get("lines") or []
    answer["clipping_planes"] = viewpoint.get("clipping_planes") or []
    answer["bitmaps"] = [bitmap_json(viewpoint, index) for index in range(len(viewpoint.get("bitmaps") or ()))]
    if viewpoint.get("snapshot"):
        answer["snapshot"] = {"snapshot_type": viewpoint["snapshot"]["snapshot_type"]}
    return answer


def viewpoint_components(viewpoint: dict) -> dict:
    """selection, coloring and visibility of a viewpoint; visibility with default_visibility false when the viewpoint
    says nothing (the API's default), view_setup_hints kept when given."""
    components = viewpoint.get("components") or {}
    visibility = components.get("visibility") or {}
    shown = {"default_visibility": bool(visibility.get("default_visibility", False)), "exceptions": list(visibility.get("exceptions") or [])}
    if visibility.get("view_setup_hints") is not None:
        shown["view_setup_hints"] = visibility["view_setup_hints"]
    return {"selection": list(components.get("selection") or []), "coloring": list(components.get("coloring") or []), "visibility": shown}
