"""BCF API 3.0 topics (3.2), related topics (3.6) and topic events (3.9): thin views over bcfapi_app.topics (reads)
and bcfapi_app.topic_services (use cases)."""

from __future__ import annotations

from api.principal import Principal
from bcfapi_app.authorization import ProjectActions
from bcfapi_app import events, odata, topic_services, topics
from bcfapi_app.responses import BcfView, bare, check_if_match, paged

# $filter fields of GET topics (3.2.1) and their kinds; $orderby fields
TOPIC_FILTER_FIELDS = {
    "creation_author": odata.TEXT, "modified_author": odata.TEXT, "assigned_to": odata.TEXT, "stage": odata.TEXT, "topic_status": odata.TEXT,
    "topic_type": odata.TEXT, "creation_date": odata.DATETIME, "modified_date": odata.DATETIME, "labels": odata.LIST, "priority": odata.TEXT,
}
TOPIC_SORT_FIELDS = {"creation_date": odata.DATETIME, "modified_date": odata.DATETIME, "server_assigned_id": odata.TEXT}


def topic_authorization(request, project_id: str) -> dict:
    """The caller's `authorization` of the project's topics."""
    return topics.topic_authorization(ProjectActions.of(Principal.of(request), project_id), topics.topic_statuses(project_id))


def authorization_of(request, project_id: str) -> dict | None:
    """A topic's `authorization` when the request asks for it (includeAuthorization=true), else None."""
    return topic_authorization(request, project_id) if topics.wants_authorization(request) else None


def check_topic_if_match(request, project_id: str, issue) -> None:
    check_if_match(request, topics.topic_json(issue), lambda: topic_authorization(request, project_id))


def topic_answer(request, project_id: str, issue, authorization: dict | None = None) -> dict:
    """topic_GET of an issue, with `authorization` when the request asks for it (computed once for a list)."""
    answer = topics.topic_json(issue)
    authorization = authorization or authorization_of(request, project_id)
    if authorization is not None:
        answer["authorization"] = authorization
    return answer


class TopicListView(BcfView):
    def get(self, request, project_id):
        """GET topics: $filter, $orderby (default creation_date), $top, $skip, includeAuthorization."""
        authorization = authorization_of(request, project_id)
        rows = [topic_answer(request, project_id, issue, authorization) for issue in topics.project_issues(project_id)]
        return paged(request, odata.query_list(request, rows, TOPIC_FILTER_FIELDS, TOPIC_SORT_FIELDS, "creation_date"))

    def post(self, request, project_id):
        """POST topics: 201 with the new topic."""
        issue = topic_services.topic_create(project_id=project_id, body=request.data, principal=Principal.of(request))
        return bare(topic_answer(request, project_id, issue), status=201)


class TopicDetailView(BcfView):
    def get(self, request, project_id, topic_guid):
        return bare(topic_answer(request, project_id, topics.topic_get(project_id, topic_guid)))

    def put(self, request, project_id, topic_guid):
        """PUT topic: a whole replace; If-Match naming a stale ETag is refused (412)."""
        issue = topics.topic_get(project_id, topic_guid)
        check_topic_if_match(request, project_id, issue)
        issue = topic_services.topic_replace(project_id=project_id, issue=issue, body=request.data, principal=Principal.of(request))
        return bare(topic_answer(request, project_id, issue))

    def delete(self, request, project_id, topic_guid):
        issue = topics.topic_get(project_id, topic_guid)
        check_topic_if_match(request, project_id, issue)
        topic_services.topic_delete(issue=issue, principal=Principal.of(request))
        return bare(None)


class RelatedTopicsView(BcfView):
    def get(self, request, project_id, topic_guid):
        issue = topics.topic_get(project_id, topic_guid)
        return bare([{"related_topic_guid": guid} for guid in issue.related_topics])

    def put(self, request, project_id, topic_guid):
        """PUT related_topics: the whole list replaced (GUIDs of other topics of the project)."""
        issue = topics.topic_get(project_id, topic_guid)
        issue = topic_services.related_topics_replace(project_id=project_id, issue=issue, body=request.data, principal=Principal.of(request))
        return bare([{"related_topic_guid": guid} for guid in issue.related_topics])


class TopicsEventsView(BcfView):
    def get(self, request, project_id):
        """GET topics/events: $filter on topic_guid, author, type, date; $orderby date; paged."""
        return paged(request, events.topic_events(request, project_id))


class TopicEventsView(BcfView):
    def get(self, request, project_id, topic_guid):
        issue = topics.topic_get(project_id, topic_guid)
        return paged(request, events.topic_events(request, project_id, issue.bcf_topic_guid))
