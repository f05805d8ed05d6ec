"""Topic and comment events (BCF API 3.9, 3.10) read from the audit trail: issues_app's services record
issue.create / issue.update (detail {topic_guid, changes: [[column, old, new]]}) and comment.create /
comment.update (detail {topic_guid, comment_guid, changes}); each change becomes the event types of the spec
(title_updated, label_added per label, ...). One answer item per action, so `type` can be filtered on.

A topic or comment made before the audit trail knew these acts (or by a BCF-XML import) gets one synthesized
topic_created / comment_created at its creation date. The audit trail's retention bounds the history: events
older than it are gone (docs/api/bcf.md).
"""

from __future__ import annotations

from accounts_app.audit_selectors import audit_events
from bcfapi_app import odata, topics
from issues_app import bcf
from issues_app.models import Comment

MAX_AUDIT_EVENTS = 50_000
TOPIC_EVENT_FIELDS = {"topic_guid": odata.TEXT, "author": odata.TEXT, "type": odata.TEXT, "date": odata.DATETIME}
COMMENT_EVENT_FIELDS = {**TOPIC_EVENT_FIELDS, "comment_guid": odata.TEXT}
SORTABLE = {"date": odata.DATETIME}
# column -> (event type prefix, value limit); "_updated" / "_removed" follow
SIMPLE_TOPIC_FIELDS = {"title": ("title", 128), "comment": ("description", 1024), "topic_type": ("type", None), "priority": ("priority", None),
                       "assigned_to": ("assigned_to", None), "due_date": ("due_date", None)}


def _date_value(value):
    return topics.iso(odata.parse_datetime(value)) if value else value


def _topic_actions(column: str, old, new) -> list[tuple[str, str | None]]:
    """The event actions (type, value) of one changed column of an issue."""
    if column == "status":
        return [("status_updated", bcf.STATUS_TO_BCF.get(new, new))]
    if column == "labels":
        old, new = old or [], new or []
        return [("label_added", label) for label in new if label not in old] + [("label_removed", label) for label in old if label not in new]
    if column == "stage":
        if not new:
            return [("stage_removed", None)] if old else []
        return [("stage_added" if not old else "stage_updated", new)]
    if column in SIMPLE_TOPIC_FIELDS:
        prefix, limit = SIMPLE_TOPIC_FIELDS[column]
        if not new:
            return [(f"{prefix}_removed", None)] if prefix != "title" and prefix != "type" else []
        value = _date_value(new) if column == "due_date" else new
        return [(f"{prefix}_updated", value[:limit] if limit else value)]
    return []  # reference links, related topics, document references, viewpoints: no event type in the spec


def _comment_actions(column: str, old, new) -> list[tuple[str, str | None]]:
    if column == "text":
        return [("comment_text_updated", (new or "")[:1024])] if new else []
    if column == "viewpoint_guid":
        return [("viewpoint_updated", new)] if new else ([("viewpoint_removed", None)] if old else [])
    return []


def _rows(event, actions: list, **keys) -> list[dict]:
    return [{**keys, "date": topics.iso(event.at), "author": event.username, "type": kind, "value": value} for kind, value in actions]


def _as_answer(row: dict, keys: tuple[str, ...]) -> dict:
    return {**{key: row[key] for key in keys}, "date": row["date"], "author": row["author"], "actions": [{"type": row["type"], "value": row["value"]}]}


def topic_events(request, project_id: str, topic_guid: str | None = None) -> list[dict]:
    """topic_event_GET items of the project's topics (or one topic), filtered and ordered by the request's OData."""
    issues = {issue.bcf_topic_guid: issue for issue in topics.project_issues(project_id).only("bcf_topic_guid", "author", "created_at")}
    if topic_guid is not None:
        issues = {guid: issue for guid, issue in issues.items() if guid.lower() == topic_guid.lower()}
    rows, created = [], set()
    for event in audit_events(project=project_id, action="issue", limit=MAX_AUDIT_EVENTS):
        guid = event.detail.get("topic_guid") if isinstance(event.detail, dict) else None
        if guid not in issues or event.action not in ("issue.create", "issue.update"):
            continue
        actions = [("topic_created", None)] if event.action == "issue.create" else []
        created.update([guid] if actions else [])
        for column, old, new in event.detail.get("changes") or ():
            actions += _topic_actions(column, old, new)
        rows += _rows(event, actions, topic_guid=guid)
    for guid, issue in issues.items():
        if guid not in created:
            rows.append({"topic_guid": guid, "date": topics.iso(issue.created_at), "author": issue.author, "type": "topic_created", "value": None})
    return [_as_answer(row, ("topic_guid",)) for row in odata.query_list(request, rows, TOPIC_EVENT_FIELDS, SORTABLE, "date")]


def comment_events(request, project_id: str, topic_guid: str | None = None, comment_guid: str | None = None) -> list[dict]:
    """comment_event_GET items of the project's comments (or one topic's, or one comment's)."""
    comments = Comment.objects.filter(issue__in=topics.project_issues(project_id)).select_related("issue").only("guid", "author", "date", "issue__bcf_topic_guid")
    if topic_guid is not None:
        comments = comments.filter(issue__bcf_topic_guid__iexact=topic_guid)
    if comment_guid is not None:
        comments = comments.filter(guid__iexact=comment_guid)
    known = {(comment.issue.bcf_topic_guid, comment.guid): comment for comment in comments}
    rows, created = [], set()
    for event in audit_events(project=project_id, action="comment", limit=MAX_AUDIT_EVENTS):
        detail = event.detail if isinstance(event.detail, dict) else {}
        key = (detail.get("topic_guid"), detail.get("comment_guid"))
        if key not in known or event.action not in ("comment.create", "comment.update"):
            continue
        actions = [("comment_created", None)] if event.action == "comment.create" else []
        created.update([key] if actions else [])
        for column, old, new in detail.get("changes") or ():
            actions += _comment_actions(column, old, new)
        rows += _rows(event, actions, topic_guid=key[0], comment_guid=key[1])
    for key, comment in known.items():
        if key not in created:
            rows.append({"topic_guid": key[0], "comment_guid": key[1], "date": topics.iso(comment.date), "author": comment.author,
                         "type": "comment_created", "value": None})
    return [_as_answer(row, ("topic_guid", "comment_guid")) for row in odata.query_list(request, rows, COMMENT_EVENT_FIELDS, SORTABLE, "date")]
