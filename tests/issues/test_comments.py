"""Comment threads of issues: GET|POST issues/{issueId}/comments, PATCH|DELETE issues/{issueId}/comments/{commentId}."""

import uuid
from datetime import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from issues_app import selectors, services
from issues_app.models import Comment, Issue

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

VIEWPOINT = "5d7e1f8a-0000-4000-8000-00000000000a"
CAMERA = {"camera_view_point": {"x": 1, "y": 2, "z": 3}, "camera_direction": {"x": 0, "y": 1, "z": 0}, "camera_up_vector": {"x": 0, "y": 0, "z": 1}, "field_of_view": 60}


@pytest.fixture
def issue(post_issue, model):
    return post_issue(model.id, {"title": "Crack", "viewpoints": [{"guid": VIEWPOINT, "perspective_camera": CAMERA}]}).json()["data"]


def url(model_id, issue_id, comment_id=None):
    base = f"/api/v1/models/{model_id}/issues/{issue_id}/comments"
    return f"{base}/{comment_id}" if comment_id else base


def state(issue_id):
    return list(Comment.objects.filter(issue_id=issue_id).values_list("guid", "text", "author", "viewpoint_guid", "modified_date")), Issue.objects.get(pk=issue_id).modified_at


def test_add_list_edit_and_delete(api, model, issue):
    first = api.post(url(model.id, issue["id"]), {"text": "Please check", "author": "anna", "viewpointGuid": VIEWPOINT}, format="json").json()["data"]
    assert uuid.UUID(first["id"]) and first["id"] == first["id"].lower()
    assert (first["author"], first["text"], first["viewpointGuid"], first["modifiedDate"], first["modifiedAuthor"]) == ("anna", "Please check", VIEWPOINT, None, "")
    assert first["date"].endswith("Z") and datetime.fromisoformat(first["date"].replace("Z", "+00:00"))
    second = api.post(url(model.id, issue["id"]), {"text": "Done"}, format="json").json()["data"]
    assert (second["author"], second["viewpointGuid"]) == ("local-user", None)
    listed = api.get(url(model.id, issue["id"])).json()["data"]
    assert [c["id"] for c in listed] == [first["id"], second["id"]]

    touched = Issue.objects.get(pk=issue["id"])
    assert touched.modified_at is not None and touched.modified_author == "local-user"  # a comment is a change of the topic

    edited = api.patch(url(model.id, issue["id"], first["id"]), {"text": "Please check again", "viewpointGuid": None, "modifiedAuthor": "bob"}, format="json").json()["data"]
    assert (edited["text"], edited["viewpointGuid"], edited["modifiedAuthor"], edited["author"]) == ("Please check again", None, "bob", "anna")
    assert edited["modifiedDate"] is not None and edited["date"] == first["date"]
    unchanged = api.patch(url(model.id, issue["id"], second["id"]), {"text": "Done"}, format="json").json()["data"]
    assert unchanged["modifiedDate"] is None  # nothing changed

    assert api.delete(url(model.id, issue["id"], first["id"])).json() == {"code": 0, "message": "ok", "data": None}
    assert [c["id"] for c in api.get(url(model.id, issue["id"])).json()["data"]] == [second["id"]]


def test_an_echoed_comment_changes_only_what_it_may(api, model, issue):
    comment = api.post(url(model.id, issue["id"]), {"text": "a", "author": "anna"}, format="json").json()["data"]
    echoed = api.patch(url(model.id, issue["id"], comment["id"]), {**comment, "text": "b", "author": "mallory", "id": str(uuid.uuid4())}, format="json").json()["data"]
    assert (echoed["id"], echoed["text"], echoed["author"]) == (comment["id"], "b", "anna")


@pytest.mark.parametrize(
    "body, message",
    [
        ({}, "text"),
        ({"text": ""}, "text"),
        ({"text": "   "}, "needs text"),
        ({"text": 5}, "text"),
        ({"text": "x" * 10_001}, "at most 10000 characters"),
        ({"text": "x", "viewpointGuid": "9d7e1f8a-0000-4000-8000-00000000000b"}, "is not a viewpoint of issue"),
        ({"text": "x", "viewpointGuid": "not-a-guid"}, "lowercase UUID"),
        ({"text": "x", "viewpointGuid": VIEWPOINT.upper()}, "lowercase UUID"),
        ({"text": "x", "colour": "red"}, "unknown field(s) colour"),
        ([1, 2], "JSON object"),
    ],
)
def test_bad_new_comments_are_40001_and_change_nothing(api, model, issue, body, message):
    before = state(issue["id"])
    response = api.post(url(model.id, issue["id"]), body, format="json")
    assert (response.status_code, response.json()["code"]) == (400, 40001), response.json()
    assert message in response.json()["message"]
    assert state(issue["id"]) == before


@pytest.mark.parametrize(
    "body, message",
    [
        ({"text": ""}, "text"),
        ({"text": " \n"}, "needs text"),
        ({"text": "x" * 10_001}, "at most 10000 characters"),
        ({"viewpointGuid": "9d7e1f8a-0000-4000-8000-00000000000b"}, "is not a viewpoint of issue"),
        ({"date": "2020-01-01T00:00:00Z", "author": "x", "colour": 1}, "unknown field(s) colour"),
    ],
)
def test_bad_comment_edits_are_40001_and_change_nothing(api, model, issue, body, message):
    comment = api.post(url(model.id, issue["id"]), {"text": "keep me", "viewpointGuid": VIEWPOINT}, format="json").json()["data"]
    before = state(issue["id"])
    response = api.patch(url(model.id, issue["id"], comment["id"]), body, format="json")
    assert (response.status_code, response.json()["code"]) == (400, 40001), response.json()
    assert message in response.json()["message"]
    assert state(issue["id"]) == before


def test_malformed_json_is_40001(api, model, issue):
    response = api.generic("POST", url(model.id, issue["id"]), "{oops", content_type="application/json")
    assert (response.status_code, response.json()["code"]) == (400, 40001)


def test_unknown_and_malformed_ids_are_40400_and_touch_nothing(api, model, issue):
    comment = api.post(url(model.id, issue["id"]), {"text": "keep"}, format="json").json()["data"]
    before = state(issue["id"])
    bad_ids = ["c_123", "..", comment["id"].upper(), comment["id"] + "0", "5d7e1f8a00004000800000000000000a"]
    assert api.delete(url(model.id, issue["id"], "..%2F..")).json()["code"] == 40400
    for method in ("patch", "delete"):
        for comment_id in bad_ids:
            with CaptureQueriesContext(connection) as queries:
                response = getattr(api, method)(url(model.id, issue["id"], comment_id), {"text": "x"}, format="json")
            assert (response.status_code, response.json()["code"]) == (404, 40400), (method, comment_id)
            assert "invalid comment id" in response.json()["message"]
            assert not [q["sql"] for q in queries.captured_queries if Comment._meta.db_table in q["sql"]]  # checked before any lookup
        unknown = str(uuid.uuid4())
        response = getattr(api, method)(url(model.id, issue["id"], unknown), {"text": "x"}, format="json")
        assert (response.status_code, response.json()["code"]) == (404, 40400) and "not found" in response.json()["message"]
    for issue_id in ("i_000000000000", "i_bad"):
        for call in (lambda: api.get(url(model.id, issue_id)), lambda: api.post(url(model.id, issue_id), {"text": "x"}, format="json"),  # noqa: B023 - called here
                     lambda: api.patch(url(model.id, issue_id, comment["id"]), {"text": "x"}, format="json"), lambda: api.delete(url(model.id, issue_id, comment["id"]))):  # noqa: B023
            response = call()
            assert (response.status_code, response.json()["code"]) == (404, 40400)
    response = api.post(url("m_0000000000000000", issue["id"]), {"text": "x"}, format="json")
    assert (response.status_code, response.json()["code"]) == (404, 40400)
    # a comment of another issue is not found through this one
    other = api.post(f"/api/v1/models/{model.id}/issues", {"issue": '{"title": "other"}'}, format="multipart").json()["data"]
    assert api.delete(url(model.id, other["id"], comment["id"])).json()["code"] == 40400
    assert state(issue["id"]) == before


def test_a_viewpoint_referred_to_by_a_comment_cannot_be_removed(api, model, issue):
    comment = api.post(url(model.id, issue["id"]), {"text": "see", "viewpointGuid": VIEWPOINT}, format="json").json()["data"]
    response = api.patch(f"/api/v1/models/{model.id}/issues/{issue['id']}", {"viewpoints": []}, format="json")
    assert response.json()["code"] == 40001 and comment["id"] in response.json()["message"]
    assert [vp["guid"] for vp in Issue.objects.get(pk=issue["id"]).viewpoints] == [VIEWPOINT]


def test_comments_need_the_token_and_go_with_their_issue(api, client, model, issue, viewer_config):
    api.post(url(model.id, issue["id"]), {"text": "x"}, format="json")
    viewer_config(apiToken="tok")
    assert client.get(url(model.id, issue["id"])).status_code == 401
    assert client.get(url(model.id, issue["id"]), HTTP_AUTHORIZATION="Bearer tok").status_code == 200
    viewer_config(apiToken="")
    api.delete(f"/api/v1/models/{model.id}/issues/{issue['id']}")
    assert Comment.objects.count() == 0


def test_the_use_cases_are_callable_without_http(model, issue):
    comment = services.comment_add(model_id=model.id, issue_id=issue["id"], text="from the agent", author="agent", viewpoint_guid=VIEWPOINT)
    changed = services.comment_update(model_id=model.id, issue_id=issue["id"], comment_id=comment.guid, changes={"text": "edited", "modifiedAuthor": "agent"})
    assert (changed.text, changed.modified_author) == ("edited", "agent")
    assert [c.guid for c in selectors.comment_list(model.id, issue["id"])] == [comment.guid]
    services.comment_delete(model_id=model.id, issue_id=issue["id"], comment_id=comment.guid)
    assert not Comment.objects.exists()
