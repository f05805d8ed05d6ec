"""BCF API 3.0 comments: made, read, listed with OData, replaced and deleted; a comment's viewpoint must be one of
its topic's; another person's signed comment is theirs; the same comments through the REST API of issues."""

from __future__ import annotations

import json
import uuid

import pytest

from issues_app.models import Comment
from tests.bcfapi import topic_helpers
from tests.bcfapi.topic_helpers import answer, send, xeokit_viewpoint

pytestmark = pytest.mark.django_db
team = topic_helpers.team

COMMENT = "Collaboration/Comment/comment_GET.json"


def test_comments_are_made_read_replaced_and_deleted(team):
    rita = team.clients["rita"]
    topic = answer(rita, "POST", f"{team.base}/topics", {"title": "Beam"}, status=201)
    viewpoint = answer(rita, "POST", f"{team.base}/topics/{topic['guid']}/viewpoints", xeokit_viewpoint(), status=201)
    comments = f"{team.base}/topics/{topic['guid']}/comments"
    guid = str(uuid.uuid4())
    made = answer(rita, "POST", comments, {"guid": guid, "comment": "Look here", "viewpoint_guid": viewpoint["guid"]}, COMMENT, status=201)
    assert (made["guid"], made["comment"], made["author"], made["topic_guid"], made["viewpoint_guid"]) == (guid, "Look here", "rita", topic["guid"], viewpoint["guid"])
    assert "modified_date" not in made
    plain = answer(rita, "POST", comments, {"comment": "No view"}, COMMENT, status=201)
    assert plain["viewpoint_guid"] is None and str(uuid.UUID(plain["guid"])) == plain["guid"]
    assert answer(rita, "GET", f"{comments}/{guid}", schema=COMMENT) == made
    assert [c["guid"] for c in answer(rita, "GET", comments, schema=COMMENT + "[]")] == [guid, plain["guid"]]
    assert [c["guid"] for c in answer(rita, "GET", f"{comments}?$filter=viewpoint_guid eq null", schema=COMMENT + "[]")] == [plain["guid"]]
    assert [c["guid"] for c in answer(rita, "GET", f"{comments}?$orderby=date desc&$filter=author eq 'rita'", schema=COMMENT + "[]")] == [plain["guid"], guid]

    rest = rita.get(f"/api/v1/models/{team.model.id}/issues/{topic['server_assigned_id']}/comments").json()["data"]
    assert [(c["id"], c["text"], c["viewpointGuid"]) for c in rest] == [(guid, "Look here", viewpoint["guid"]), (plain["guid"], "No view", None)]

    replaced = answer(rita, "PUT", f"{comments}/{guid}", {"comment": "Look there"}, COMMENT)
    assert (replaced["comment"], replaced["viewpoint_guid"], replaced["modified_author"]) == ("Look there", None, "rita")
    assert replaced["modified_date"].endswith("Z")
    assert answer(rita, "GET", f"{team.base}/topics/{topic['guid']}")["modified_date"] >= replaced["modified_date"][:19]
    send(rita, "DELETE", f"{comments}/{guid}")
    send(rita, "GET", f"{comments}/{guid}", status=404)
    assert not Comment.objects.filter(guid=guid).exists()


def test_bad_comments_are_refused_naming_the_field(team):
    rita = team.clients["rita"]
    topic = answer(rita, "POST", f"{team.base}/topics", {"title": "Beam"}, status=201)
    comments = f"{team.base}/topics/{topic['guid']}/comments"
    assert "viewpoint_guid" in answer(rita, "POST", comments, {"comment": "x", "viewpoint_guid": str(uuid.uuid4())}, status=400)["message"]
    assert answer(rita, "POST", comments, {"comment": "  "}, status=400)["message"].startswith("comment:")
    assert answer(rita, "POST", comments, {"comment": "x" * 10_001}, status=400)["message"].startswith("comment:")
    assert answer(rita, "POST", comments, {"text": "x"}, status=400)["message"].startswith("text: not a property")
    guid = answer(rita, "POST", comments, {"comment": "x"}, status=201)["guid"]
    assert "exists already" in answer(rita, "POST", comments, {"guid": guid, "comment": "again"}, status=409)["message"]
    send(team.clients["vera"], "POST", comments, {"comment": "viewer"}, status=403)
    send(rita, "GET", f"{comments}/{uuid.uuid4()}", status=404)


def test_another_persons_signed_comment_is_theirs(team):
    rita, olga = team.clients["rita"], team.clients["olga"]
    topic = answer(rita, "POST", f"{team.base}/topics", {"title": "Beam"}, status=201)
    comments = f"{team.base}/topics/{topic['guid']}/comments"
    guid = answer(olga, "POST", comments, {"comment": "mine"}, status=201)["guid"]
    theirs = answer(rita, "GET", f"{comments}/{guid}?includeAuthorization=true", schema=COMMENT)
    assert theirs["authorization"] == {"comment_actions": []}
    assert answer(olga, "GET", f"{comments}/{guid}?includeAuthorization=true")["authorization"] == {"comment_actions": ["update", "delete"]}
    send(rita, "PUT", f"{comments}/{guid}", {"comment": "changed"}, status=403)
    send(rita, "DELETE", f"{comments}/{guid}", status=403)
    etag = send(olga, "GET", f"{comments}/{guid}")["ETag"]
    answer(olga, "PUT", f"{comments}/{guid}", {"comment": "mine, edited"}, COMMENT, headers={"If-Match": etag})
    send(olga, "DELETE", f"{comments}/{guid}", headers={"If-Match": etag}, status=412)


def test_a_comment_made_in_the_web_client_is_read_by_the_bcf_api(team):
    rita = team.clients["rita"]
    made = rita.post(f"/api/v1/models/{team.model.id}/issues", {"issue": json.dumps({"title": "web"})}).json()["data"]
    comment = rita.post(f"/api/v1/models/{team.model.id}/issues/{made['id']}/comments", json.dumps({"text": "from the web"}), content_type="application/json").json()["data"]
    listed = answer(rita, "GET", f"{team.base}/topics/{made['topicGuid']}/comments", schema=COMMENT + "[]")
    assert [(c["guid"], c["comment"], c["author"], c["topic_guid"]) for c in listed] == [(comment["id"], "from the web", "rita", made["topicGuid"])]
