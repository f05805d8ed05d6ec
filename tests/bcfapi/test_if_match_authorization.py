"""If-Match on PUT/DELETE of a topic or comment accepts the ETag of either GET answer the client may have read: the
plain one and the one with `authorization` (includeAuthorization=true); a stale one of either is still refused."""

from __future__ import annotations

import pytest

from tests.bcfapi import topic_helpers
from tests.bcfapi.topic_helpers import answer, send

pytestmark = pytest.mark.django_db
team = topic_helpers.team

TOPIC = "Collaboration/Topic/topic_GET.json"
COMMENT = "Collaboration/Comment/comment_GET.json"


def test_a_topic_read_with_its_authorization_is_replaced_and_deleted_by_that_etag(team):
    rita = team.clients["rita"]
    path = f"{team.base}/topics/{answer(rita, 'POST', f'{team.base}/topics', {'title': 'a'}, TOPIC, status=201)['guid']}"
    read = send(rita, "GET", f"{path}?includeAuthorization=true")
    assert "authorization" in read.json() and read["ETag"] != send(rita, "GET", path)["ETag"]
    answer(rita, "PUT", path, {"title": "b"}, TOPIC, headers={"If-Match": read["ETag"]})
    send(rita, "PUT", path, {"title": "stale"}, headers={"If-Match": read["ETag"]}, status=412)
    send(rita, "DELETE", path, headers={"If-Match": send(rita, "GET", f"{path}?includeAuthorization=true")["ETag"]})
    send(rita, "GET", path, status=404)


def test_a_comment_read_with_its_authorization_is_replaced_and_deleted_by_that_etag(team):
    rita = team.clients["rita"]
    topic = answer(rita, "POST", f"{team.base}/topics", {"title": "a"}, TOPIC, status=201)
    comments = f"{team.base}/topics/{topic['guid']}/comments"
    path = f"{comments}/{answer(rita, 'POST', comments, {'comment': 'one'}, COMMENT, status=201)['guid']}"
    etag = send(rita, "GET", f"{path}?includeAuthorization=true")["ETag"]
    answer(rita, "PUT", path, {"comment": "two"}, COMMENT, headers={"If-Match": etag})
    send(rita, "DELETE", path, headers={"If-Match": etag}, status=412)
    send(rita, "DELETE", path, headers={"If-Match": send(rita, "GET", f"{path}?includeAuthorization=true")["ETag"]})
    send(rita, "GET", path, status=404)
