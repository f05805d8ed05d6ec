"""BCF API 3.0 comments (3.4) and comment events (3.10): thin views over bcfapi_app.topics and topic_services."""

from __future__ import annotations

from api.principal import Principal
from bcfapi_app import events, odata, topic_services, topics
from bcfapi_app.authorization import ProjectActions
from bcfapi_app.responses import BcfView, bare, check_if_match, paged

COMMENT_FILTER_FIELDS = {"date": odata.DATETIME, "author": odata.TEXT, "viewpoint_guid": odata.TEXT}
COMMENT_SORT_FIELDS = {"date": odata.DATETIME}


def comment_authorization(request, project_id: str, comment, actions: ProjectActions | None = None) -> dict:
    """The caller's `authorization` of a comment (`actions`: the caller's in the project, once for a list)."""
    principal = Principal.of(request)
    return {"comment_actions": topics.comment_actions(principal, actions or ProjectActions.of(principal, project_id), comment)}


def comment_answer(request, project_id: str, issue, comment, actions: ProjectActions | None = None) -> dict:
    """comment_GET, with `authorization` when the request asks for it."""
    answer = topics.comment_json(comment, issue.bcf_topic_guid)
    if topics.wants_authorization(request):
        answer["authorization"] = comment_authorization(request, project_id, comment, actions)
    return answer


def check_comment_if_match(request, project_id: str, issue, comment) -> None:
    check_if_match(request, topics.comment_json(comment, issue.bcf_topic_guid), lambda: comment_authorization(request, project_id, comment))


class CommentListView(BcfView):
    def get(self, request, project_id, topic_guid):
        """GET comments: $filter on date, author, viewpoint_guid; $orderby date (the default); paged."""
        issue = topics.topic_get(project_id, topic_guid)
        actions = ProjectActions.of(Principal.of(request), project_id) if topics.wants_authorization(request) else None
        rows = [comment_answer(request, project_id, issue, comment, actions) for comment in issue.comments.all()]
        return paged(request, odata.query_list(request, rows, COMMENT_FILTER_FIELDS, COMMENT_SORT_FIELDS, "date"))

    def post(self, request, project_id, topic_guid):
        issue = topics.topic_get(project_id, topic_guid)
        comment = topic_services.comment_create(issue=issue, body=request.data, principal=Principal.of(request))
        return bare(comment_answer(request, project_id, issue, comment), status=201)


class CommentDetailView(BcfView):
    def get(self, request, project_id, topic_guid, comment_guid):
        issue = topics.topic_get(project_id, topic_guid)
        return bare(comment_answer(request, project_id, issue, topics.comment_get(issue, comment_guid)))

    def put(self, request, project_id, topic_guid, comment_guid):
        """PUT comment: text and viewpoint replaced; If-Match naming a stale ETag is refused (412)."""
        issue = topics.topic_get(project_id, topic_guid)
        comment = topics.comment_get(issue, comment_guid)
        check_comment_if_match(request, project_id, issue, comment)
        comment = topic_services.comment_replace(project_id=project_id, issue=issue, comment=comment, body=request.data, principal=Principal.of(request))
        return bare(comment_answer(request, project_id, issue, comment))

    def delete(self, request, project_id, topic_guid, comment_guid):
        issue = topics.topic_get(project_id, topic_guid)
        comment = topics.comment_get(issue, comment_guid)
        check_comment_if_match(request, project_id, issue, comment)
        topic_services.comment_remove(project_id=project_id, issue=issue, comment=comment, principal=Principal.of(request))
        return bare(None)


class CommentsEventsView(BcfView):
    def get(self, request, project_id):
        """GET topics/comments/events: $filter on comment_guid, topic_guid, author, type, date; $orderby date; paged."""
        return paged(request, events.comment_events(request, project_id))


class CommentEventsView(BcfView):
    def get(self, request, project_id, topic_guid, comment_guid):
        issue = topics.topic_get(project_id, topic_guid)
        comment = topics.comment_get(issue, comment_guid)
        return paged(request, events.comment_events(request, project_id, issue.bcf_topic_guid, comment.guid))
