"""BCF projects: the caller's projects with their action lists, one project (GET, PUT its name with If-Match),
its extensions from what the project uses, the members and the caller's role (answers schema-checked by conftest)."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts_app.models import AuditEvent, ProjectMember
from issues_app.models import Issue
from models_app.models import Project
from tests.accounts.people import project_with_models
from tests.bcfapi.conftest import as_bearer, tokens_for

pytestmark = pytest.mark.django_db


def session(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_list_holds_the_callers_projects_with_the_actions_of_their_role(people, desktop_client):
    project_with_models("Someone else's", models=1)
    empty, _ = project_with_models("Drawings only", models=0)
    ProjectMember.objects.create(project=empty, user=people["olga"], role="owner")
    tower = people["project"].id
    olga = as_bearer(tokens_for("olga", desktop_client)["access_token"])
    listed = {p["project_id"]: p for p in olga.get("/bcf/3.0/projects").json()}
    assert set(listed) == {tower, empty.id}
    assert listed[tower] == {"project_id": tower, "name": "Tower", "authorization": {"project_actions": ["update", "createTopic", "createDocument"]}}
    # no IFC model: no new topics there
    assert listed[empty.id]["authorization"]["project_actions"] == ["update", "createDocument"]
    assert [p["authorization"]["project_actions"] for p in session(people["rita"]).get("/bcf/3.0/projects").json()] == [["createTopic", "createDocument"]]
    assert [p["authorization"]["project_actions"] for p in session(people["vic"]).get("/bcf/3.0/projects").json()] == [[]]
    assert session(people["otto"]).get("/bcf/3.0/projects").json() == []


def test_a_project_outside_ones_reach_is_404_and_a_missing_one_too(people):
    otto = session(people["otto"])
    assert otto.get(f"/bcf/3.0/projects/{people['project'].id}").status_code == 404
    assert otto.get("/bcf/3.0/projects/p_0000000000000000").status_code == 404
    assert session(people["rita"]).get("/bcf/3.0/projects/not-an-id").status_code == 404


def test_the_owner_renames_the_project_and_if_match_guards_the_change(people, desktop_client):
    olga = as_bearer(tokens_for("olga", desktop_client)["access_token"])
    path = f"/bcf/3.0/projects/{people['project'].id}"
    read = olga.get(path)
    renamed = olga.put(path, {"name": "Tower B"}, content_type="application/json", headers={"If-Match": read["ETag"]})
    assert renamed.status_code == 200 and renamed.json()["name"] == "Tower B"
    assert Project.objects.get(pk=people["project"].id).title == "Tower B"
    assert AuditEvent.objects.filter(action="project.rename", username="olga", via="oauth").exists()
    stale = olga.put(path, {"name": "Tower C"}, content_type="application/json", headers={"If-Match": read["ETag"]})
    assert stale.status_code == 412 and "If-Match" in stale.json()["message"]
    assert olga.put(path, {"name": "Tower C"}, content_type="application/json").status_code == 200  # no If-Match: goes ahead


@pytest.mark.parametrize("body", [{}, {"name": ""}, {"name": 5}, {"name": "x" * 256}, [1]])
def test_a_bad_project_body_is_400_naming_the_field(people, body):
    answer = session(people["olga"]).put(f"/bcf/3.0/projects/{people['project'].id}", body, content_type="application/json")
    assert answer.status_code == 400 and answer.json()["message"]
    if isinstance(body, dict):
        assert answer.json()["message"].startswith("name")


def test_a_reviewer_may_not_rename(people):
    answer = session(people["rita"]).put(f"/bcf/3.0/projects/{people['project'].id}", {"name": "x"}, content_type="application/json")
    assert answer.status_code == 403


def test_extensions_come_from_what_the_project_uses_its_members_and_the_role(people):
    model = people["model"]
    Issue.objects.create(model=model, title="a", topic_type="Coordination", priority="Urgent", stage="Design", labels=["ARC", "provenance:AI"],
                         bcf_topic_status="Needs Review", status="checking")
    Issue.objects.create(model=model, title="b", labels=["MEP"])
    rita = session(people["rita"]).get(f"/bcf/3.0/projects/{people['project'].id}/extensions").json()
    assert rita["topic_type"][0] == "Issue" and "Coordination" in rita["topic_type"]
    assert rita["priority"][-1] == "Urgent" and rita["stage"][:1] == ["Design"] and rita["stage"].count("Design") == 1
    assert rita["topic_label"] == ["ARC", "MEP"]
    assert rita["topic_status"][:3] == ["Open", "In Progress", "Resolved"] and "Needs Review" in rita["topic_status"]
    assert rita["users"] == ["olga", "rita", "vic"] and rita["snippet_type"] == []
    assert rita["project_actions"] == ["createTopic", "createDocument"]
    assert rita["topic_actions"] == ["update", "updateRelatedTopics", "updateDocumentReferences", "updateFiles", "createComment", "createViewpoint", "delete"]
    assert rita["comment_actions"] == ["update", "delete"]
    vic = session(people["vic"]).get(f"/bcf/3.0/projects/{people['project'].id}/extensions").json()
    assert vic["project_actions"] == vic["topic_actions"] == vic["comment_actions"] == []
