"""Topic and comment events (BCF API 3.9, 3.10) from the audit trail: what the BCF API and the REST API of issues
change is there field by field with the spec's event types; older topics and comments get a synthesized creation."""

from __future__ import annotations

import json
import uuid

import pytest

from accounts_app.models import AuditEvent
from issues_app.models import Comment, Issue
from tests.bcfapi import topic_helpers
from tests.bcfapi.topic_helpers import answer, send

pytestmark = pytest.mark.django_db
team = topic_helpers.team

TOPIC_EVENT = "Collaboration/Events/topic_event_GET.json"
COMMENT_EVENT = "Collaboration/Events/comment_event_GET.json"


def actions(events: list[dict]) -> list[tuple[str, str | None]]:
    return [(action["type"], action["value"]) for event in events for action in event["actions"]]


def test_topic_events_name_each_change(team):
    rita, olga = team.clients["rita"], team.clients["olga"]
    topic = answer(rita, "POST", f"{team.base}/topics", {"title": "Beam", "description": "cut", "labels": ["MEP"], "priority": "High"}, status=201)
    path = f"{team.base}/topics/{topic['guid']}"
    answer(olga, "PUT", path, {"title": "Beam cut", "topic_status": "In Progress", "labels": ["ARC"], "stage": "Design", "due_date": "2027-03-01T00:00:00Z",
                               "assigned_to": "rita", "topic_type": "Clash"})
    answer(olga, "PUT", path, {"title": "Beam cut", "topic_status": "In Progress", "labels": ["ARC"], "stage": "Tender", "topic_type": "Clash"})
    events = answer(rita, "GET", f"{path}/events", schema=TOPIC_EVENT + "[]")
    assert actions(events) == [
        ("topic_created", None), ("title_updated", "Beam"), ("description_updated", "cut"), ("status_updated", "Open"), ("type_updated", "Issue"),
        ("priority_updated", "High"), ("label_added", "MEP"),
        ("title_updated", "Beam cut"), ("description_removed", None), ("status_updated", "In Progress"), ("type_updated", "Clash"),
        ("priority_removed", None), ("label_added", "ARC"), ("label_removed", "MEP"), ("assigned_to_updated", "rita"),
        ("due_date_updated", "2027-03-01T00:00:00Z"), ("stage_added", "Design"),
        ("assigned_to_removed", None), ("due_date_removed", None), ("stage_updated", "Tender"),
    ]
    assert {event["topic_guid"] for event in events} == {topic["guid"]}
    assert [event["author"] for event in events][:7] == ["rita"] * 7 and events[-1]["author"] == "olga"
    assert actions(answer(rita, "GET", f"{team.base}/topics/events?$filter=type eq 'label_added' or type eq 'label_removed'", schema=TOPIC_EVENT + "[]")) == [
        ("label_added", "MEP"), ("label_added", "ARC"), ("label_removed", "MEP")]
    assert {event["author"] for event in answer(rita, "GET", f"{team.base}/topics/events?$filter=author eq 'olga' and date gt 2000-01-01T00:00:00Z")} == {"olga"}
    newest = send(rita, "GET", f"{team.base}/topics/events?$orderby=date desc&$top=2", schema=TOPIC_EVENT + "[]")
    assert actions(newest.json()) == [("assigned_to_removed", None), ("due_date_removed", None)]  # the last change first
    assert newest["X-Total-Count"] == str(len(events))
    assert "unknown field" in answer(rita, "GET", f"{team.base}/topics/events?$filter=title eq 'x'", status=400)["message"]


def test_changes_through_the_rest_api_are_events_too_and_old_topics_get_a_creation(team):
    rita = team.clients["rita"]
    made = rita.post(f"/api/v1/models/{team.model.id}/issues", {"issue": json.dumps({"title": "web"})}).json()["data"]
    rita.patch(f"/api/v1/models/{team.model.id}/issues/{made['id']}", json.dumps({"status": "resolved"}), content_type="application/json")
    assert actions(answer(rita, "GET", f"{team.base}/topics/{made['topicGuid']}/events")) == [
        ("topic_created", None), ("title_updated", "web"), ("status_updated", "Open"), ("type_updated", "Issue"), ("status_updated", "Resolved")]
    old = Issue.objects.create(model=team.model, title="before the audit", author="someone")
    Issue.objects.filter(pk=old.pk).update(bcf_topic_guid=str(uuid.uuid4()))
    old.refresh_from_db()
    events = answer(rita, "GET", f"{team.base}/topics/{old.bcf_topic_guid}/events", schema=TOPIC_EVENT + "[]")
    assert events == [{"topic_guid": old.bcf_topic_guid, "date": events[0]["date"], "author": "someone", "actions": [{"type": "topic_created", "value": None}]}]
    assert AuditEvent.objects.filter(action="issue.update", project_id=team.project.id).count() == 1


def test_comment_events(team):
    rita = team.clients["rita"]
    topic = answer(rita, "POST", f"{team.base}/topics", {"title": "Beam"}, status=201)
    viewpoint = answer(rita, "POST", f"{team.base}/topics/{topic['guid']}/viewpoints", topic_helpers.xeokit_viewpoint(), status=201)["guid"]
    comments = f"{team.base}/topics/{topic['guid']}/comments"
    comment = answer(rita, "POST", comments, {"comment": "see", "viewpoint_guid": viewpoint}, status=201)["guid"]
    answer(rita, "PUT", f"{comments}/{comment}", {"comment": "see this"})
    other = answer(rita, "POST", comments, {"comment": "another"}, status=201)["guid"]
    events = answer(rita, "GET", f"{comments}/{comment}/events", schema=COMMENT_EVENT + "[]")
    assert actions(events) == [("comment_created", None), ("comment_text_updated", "see"), ("viewpoint_updated", viewpoint),
                               ("comment_text_updated", "see this"), ("viewpoint_removed", None)]
    assert {(event["topic_guid"], event["comment_guid"]) for event in events} == {(topic["guid"], comment)}
    everything = answer(rita, "GET", f"{team.base}/topics/comments/events?$filter=comment_guid eq '{other}'", schema=COMMENT_EVENT + "[]")
    assert actions(everything) == [("comment_created", None), ("comment_text_updated", "another")]
    imported = Comment.objects.create(issue=Issue.objects.get(bcf_topic_guid=topic["guid"]), text="from an archive", author="someone")
    synthesized = answer(rita, "GET", f"{team.base}/topics/comments/events?$filter=type eq 'comment_created'", schema=COMMENT_EVENT + "[]")
    assert [event["comment_guid"] for event in synthesized] == [comment, other, imported.guid]
