"""BCF API 3.0 topics over this service's issues (docs/decisions/0010 section 4): create, read, replace, delete;
one topic is one issue (the REST API of issues sees it, and the other way round); 409 on a GUID conflict; statuses;
includeAuthorization; If-Match; related topics and files. Every answer is validated against the official schemas."""

from __future__ import annotations

import json
import uuid

import pytest

from issues_app.models import Issue
from models_app.storage import model_dir
from tests.bcfapi import topic_helpers
from tests.bcfapi.conftest import as_bearer, tokens_for
from tests.bcfapi.topic_helpers import answer, send

pytestmark = pytest.mark.django_db
team = topic_helpers.team

TOPIC = "Collaboration/Topic/topic_GET.json"


def full_topic(**changes) -> dict:
    body = {
        "guid": str(uuid.uuid4()), "topic_type": "Clash", "topic_status": "In Progress", "title": "Duct through beam", "priority": "High",
        "labels": ["MEP", "Structure"], "assigned_to": "rita", "stage": "Design", "description": "The duct cuts the beam at grid C/4.",
        "due_date": "2027-01-31T12:00:00Z", "reference_links": ["https://example.com/spec/4.2"],
    }
    body.update(changes)
    return body


def test_a_topic_is_created_read_replaced_and_deleted_and_is_the_same_issue_in_the_rest_api(team):
    rita = team.clients["rita"]
    body = full_topic()
    created = answer(rita, "POST", f"{team.base}/topics", body, TOPIC, status=201)
    for key in ("guid", "topic_type", "topic_status", "title", "priority", "labels", "assigned_to", "stage", "description", "due_date", "reference_links"):
        assert created[key] == body[key], key
    assert created["creation_author"] == "rita" and created["creation_date"].endswith("Z")
    issue = Issue.objects.get(bcf_topic_guid=body["guid"])
    assert (issue.model_id, issue.status, issue.comment, created["server_assigned_id"]) == (team.model.id, "checking", body["description"], issue.id)

    rest = next(item for item in answer(rita, "GET", f"/api/v1/models/{team.model.id}/issues")["data"] if item["id"] == issue.id)
    assert (rest["topicGuid"], rest["title"], rest["labels"], rest["assignedTo"], rest["status"]) == (body["guid"], body["title"], body["labels"], "rita", "checking")
    assert rest["assignedToMember"] is True
    assert answer(rita, "GET", f"{team.base}/topics/{body['guid']}", schema=TOPIC) == created
    assert answer(rita, "GET", f"{team.base}/topics/{body['guid'].upper()}", schema=TOPIC)["guid"] == body["guid"]

    replaced = answer(rita, "PUT", f"{team.base}/topics/{body['guid']}", {"title": "Duct moved", "topic_status": "Resolved", "labels": ["MEP"]}, TOPIC)
    assert (replaced["title"], replaced["topic_status"], replaced["labels"]) == ("Duct moved", "Resolved", ["MEP"])
    for emptied in ("priority", "assigned_to", "stage", "description", "due_date"):
        assert replaced[emptied] is None, emptied
    assert (replaced["topic_type"], replaced["reference_links"], replaced["modified_author"]) == ("Issue", [], "rita")
    issue.refresh_from_db()
    assert (issue.status, issue.priority, issue.modified_author) == ("resolved", "", "rita")

    send(rita, "DELETE", f"{team.base}/topics/{body['guid']}")
    send(rita, "GET", f"{team.base}/topics/{body['guid']}", status=404)
    assert not Issue.objects.filter(pk=issue.id).exists()


def test_an_issue_made_in_the_web_client_is_a_topic_with_its_fields(team):
    rita = team.clients["rita"]
    issue = {"title": "Door too narrow", "comment": "80 cm, needs 90", "topicType": "Request", "priority": "Normal", "labels": ["ARC"],
             "assignedTo": "olga", "stage": "Tender", "dueDate": "2027-02-01T08:30:00Z", "referenceLinks": ["https://example.com/a"]}
    made = rita.post(f"/api/v1/models/{team.model.id}/issues", {"issue": json.dumps(issue)}).json()["data"]
    topic = answer(rita, "GET", f"{team.base}/topics/{made['topicGuid']}", schema=TOPIC)
    assert topic == {
        "guid": made["topicGuid"], "server_assigned_id": made["id"], "topic_type": "Request", "topic_status": "Open", "reference_links": ["https://example.com/a"],
        "title": "Door too narrow", "priority": "Normal", "labels": ["ARC"], "creation_date": topic["creation_date"], "creation_author": "rita",
        "assigned_to": "olga", "stage": "Tender", "description": "80 cm, needs 90", "due_date": "2027-02-01T08:30:00Z",
    }
    assert [item["guid"] for item in answer(rita, "GET", f"{team.base}/topics", schema=TOPIC + "[]")] == [made["topicGuid"]]


def test_a_guid_already_in_the_project_is_a_conflict_and_bad_fields_are_named(team):
    rita = team.clients["rita"]
    guid = str(uuid.uuid4())
    answer(rita, "POST", f"{team.base}/topics", {"guid": guid, "title": "first"}, TOPIC, status=201)
    assert "exists already" in answer(rita, "POST", f"{team.base}/topics", {"guid": guid.upper(), "title": "again"}, status=409)["message"]
    upper = str(uuid.uuid4()).upper()
    assert answer(rita, "POST", f"{team.base}/topics", {"guid": upper, "title": "kept lowercase, as BCF imports keep GUIDs"}, TOPIC, status=201)["guid"] == upper.lower()
    assert "topic_status" in answer(rita, "POST", f"{team.base}/topics", {"title": "x", "topic_status": "Pending"}, status=400)["message"]
    assert "title" in answer(rita, "POST", f"{team.base}/topics", {"topic_type": "Issue"}, status=400)["message"]
    assert "guid" in answer(rita, "POST", f"{team.base}/topics", {"guid": "not-a-guid", "title": "x"}, status=400)["message"]
    assert "colour" in answer(rita, "POST", f"{team.base}/topics", {"title": "x", "colour": "red"}, status=400)["message"]
    snippet = {"snippet_type": "clash", "is_external": True, "reference": "https://example.com/s.xml", "reference_schema": "https://example.com/s.xsd"}
    assert "bim_snippet" in answer(rita, "POST", f"{team.base}/topics", {"title": "x", "bim_snippet": snippet}, status=400)["message"]
    assert answer(rita, "POST", f"{team.base}/topics", {"title": "indexed", "index": 3, "bim_snippet": None}, TOPIC, status=201)["title"] == "indexed"
    assert "due_date" in answer(rita, "POST", f"{team.base}/topics", {"title": "x", "due_date": "tomorrow"}, status=400)["message"]
    assert "labels" in answer(rita, "PUT", f"{team.base}/topics/{guid}", {"title": "x", "labels": "MEP"}, status=400)["message"]
    send(rita, "GET", f"{team.base}/topics/{uuid.uuid4()}", status=404)


def test_imported_statuses_are_kept_and_the_provenance_label_is_read_only(team):
    rita = team.clients["rita"]
    made = rita.post(f"/api/v1/models/{team.model.id}/issues", {"issue": json.dumps({"title": "agent finding"})}).json()["data"]
    Issue.objects.filter(pk=made["id"]).update(bcf_topic_status="Closed", status="resolved", provenance="AI")  # as a BCF import of an agent's finding
    topic = answer(rita, "GET", f"{team.base}/topics/{made['topicGuid']}?includeAuthorization=true", schema=TOPIC)
    assert topic["topic_status"] == "Closed" and "provenance:AI" in topic["labels"]
    assert topic["authorization"]["topic_status"] == ["Open", "In Progress", "Resolved", "Closed"]
    put = {key: topic[key] for key in ("title", "topic_type", "topic_status", "labels")}
    assert answer(rita, "PUT", f"{team.base}/topics/{made['topicGuid']}", put, TOPIC)["labels"] == ["provenance:AI"]
    assert Issue.objects.get(pk=made["id"]).labels == []
    other = answer(rita, "POST", f"{team.base}/topics", {"title": "closed at once", "topic_status": "Closed"}, TOPIC, status=201)
    assert other["topic_status"] == "Closed" and Issue.objects.get(bcf_topic_guid=other["guid"]).status == "resolved"
    reopened = answer(rita, "PUT", f"{team.base}/topics/{made['topicGuid']}", {**put, "topic_status": "Open"}, TOPIC)
    assert reopened["topic_status"] == "Open" and Issue.objects.get(pk=made["id"]).status == "open"


def test_authorization_follows_the_role(team):
    topic = answer(team.clients["rita"], "POST", f"{team.base}/topics", {"title": "t"}, TOPIC, status=201)
    path = f"{team.base}/topics/{topic['guid']}?includeAuthorization=true"
    reviewer = answer(team.clients["rita"], "GET", path, schema=TOPIC)["authorization"]
    assert "update" in reviewer["topic_actions"] and "createComment" in reviewer["topic_actions"] and reviewer["topic_status"][:3] == ["Open", "In Progress", "Resolved"]
    viewer = answer(team.clients["vera"], "GET", path, schema=TOPIC)["authorization"]
    assert viewer == {"topic_actions": [], "topic_status": []}
    assert "authorization" not in answer(team.clients["vera"], "GET", f"{team.base}/topics/{topic['guid']}", schema=TOPIC)
    listed = answer(team.clients["vera"], "GET", f"{team.base}/topics?includeAuthorization=true", schema=TOPIC + "[]")
    assert listed[0]["authorization"] == viewer
    send(team.clients["vera"], "POST", f"{team.base}/topics", {"title": "no"}, status=403)
    send(team.clients["vera"], "PUT", f"{team.base}/topics/{topic['guid']}", {"title": "no"}, status=403)
    send(team.clients["vera"], "DELETE", f"{team.base}/topics/{topic['guid']}", status=403)


def test_if_match_guards_put_and_delete(team):
    rita = team.clients["rita"]
    topic = answer(rita, "POST", f"{team.base}/topics", {"title": "t"}, TOPIC, status=201)
    path = f"{team.base}/topics/{topic['guid']}"
    etag = send(rita, "GET", path)["ETag"]
    assert send(rita, "GET", path, headers={"If-None-Match": etag}, status=304).content == b""
    send(rita, "PUT", path, {"title": "first change"}, TOPIC, headers={"If-Match": etag})
    send(rita, "PUT", path, {"title": "stale change"}, headers={"If-Match": etag}, status=412)
    send(rita, "DELETE", path, headers={"If-Match": etag}, status=412)
    assert answer(rita, "GET", path)["title"] == "first change"


def test_a_project_without_an_ifc_model_takes_no_topic(team):
    team.model.project_link.delete()
    send(team.clients["olga"], "POST", f"{team.base}/topics", {"title": "nowhere"}, status=403)
    assert answer(team.clients["olga"], "GET", f"{team.base}/topics", schema=TOPIC + "[]") == []


def test_related_topics_name_other_topics_of_the_project(team):
    rita = team.clients["rita"]
    first, second, third = (answer(rita, "POST", f"{team.base}/topics", {"title": name}, TOPIC, status=201)["guid"] for name in ("a", "b", "c"))
    path = f"{team.base}/topics/{first}/related_topics"
    related = "Collaboration/RelatedTopic/related_topic_GET.json[]"
    assert answer(rita, "GET", path, schema=related) == []
    body = [{"related_topic_guid": second}, {"related_topic_guid": third}]
    assert answer(rita, "PUT", path, body, related) == body
    assert answer(rita, "GET", path, schema=related) == body
    assert Issue.objects.get(bcf_topic_guid=first).related_topics == [second, third]
    assert "not another topic" in answer(rita, "PUT", path, [{"related_topic_guid": str(uuid.uuid4())}], status=400)["message"]
    assert "not another topic" in answer(rita, "PUT", path, [{"related_topic_guid": first}], status=400)["message"]
    send(team.clients["vera"], "PUT", path, [], status=403)
    assert answer(rita, "PUT", path, [], related) == []


def test_files_information_lists_the_models_and_a_topic_takes_them_as_files(team):
    rita = team.clients["rita"]
    (model_dir(team.model.id) / "metadata.json").write_text(
        json.dumps({"projectId": "0J$yPqHBD12v72y4qF6XcD", "metaObjects": []}))
    information = answer(rita, "GET", f"{team.base}/files_information", schema="Collaboration/File/project_files_information_GET.json")
    assert len(information) == 1
    file = information[0]["file"]
    assert (file["ifc_project"], file["filename"]) == ("0J$yPqHBD12v72y4qF6XcD", team.model.name)
    assert file["reference"].endswith(f"/api/v1/models/{team.model.id}/download")
    assert [entry["field_display_name"] for entry in information[0]["display_information"]] == ["Model", "Discipline", "Version"]

    topic = answer(rita, "POST", f"{team.base}/topics", {"title": "t"}, TOPIC, status=201)
    path = f"{team.base}/topics/{topic['guid']}/files"
    assert answer(rita, "GET", path, schema="Collaboration/File/file_GET.json[]") == []
    assert answer(rita, "PUT", path, [file], "Collaboration/File/file_GET.json[]") == [file]
    assert answer(rita, "GET", path, schema="Collaboration/File/file_GET.json[]") == [file]
    assert Issue.objects.get(bcf_topic_guid=topic["guid"]).bcf_header_files[0]["ifcProject"] == "0J$yPqHBD12v72y4qF6XcD"
    stranger = {**file, "reference": "https://elsewhere.example/x.ifc"}
    assert "files_information" in answer(rita, "PUT", path, [stranger], status=400)["message"]


def test_a_client_signed_in_through_oauth2_writes_topics_signed_by_its_user(team, desktop_client):
    token = tokens_for("rita", desktop_client)["access_token"]
    client = as_bearer(token)
    topic = answer(client, "POST", f"{team.base}/topics", {"title": "from a BCF client", "topic_status": "Open"}, TOPIC, status=201)
    assert topic["creation_author"] == "rita"
    issue = Issue.objects.get(bcf_topic_guid=topic["guid"])
    assert (issue.author, issue.author_verified) == ("rita", True)
    comment = answer(client, "POST", f"{team.base}/topics/{topic['guid']}/comments", {"comment": "signed"}, status=201)
    assert comment["author"] == "rita" and issue.comments.get(guid=comment["guid"]).author_verified
    viewer = as_bearer(tokens_for("vera", desktop_client)["access_token"])
    send(viewer, "POST", f"{team.base}/topics", {"title": "no"}, status=403)
    assert answer(viewer, "GET", f"{team.base}/topics/{topic['guid']}", schema=TOPIC)["title"] == "from a BCF client"
