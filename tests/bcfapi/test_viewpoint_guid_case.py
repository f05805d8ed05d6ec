"""A viewpoint's GUID compares in any case, as every GUID of the BCF API does: a topic holding a viewpoint stored
in uppercase (the APIs store GUIDs in lowercase now, rows written before may not be) refuses a second viewpoint of
that GUID (409), and keeps it while a comment names it in another case."""

from __future__ import annotations

import pytest

from issues_app.models import Issue
from tests.bcfapi import topic_helpers
from tests.bcfapi.topic_helpers import answer, send, xeokit_viewpoint

pytestmark = pytest.mark.django_db
team = topic_helpers.team


def test_a_viewpoint_guid_compares_in_any_case(team):
    rita = team.clients["rita"]
    topic = answer(rita, "POST", f"{team.base}/topics", {"title": "Beam"}, status=201)["guid"]
    viewpoints = f"{team.base}/topics/{topic}/viewpoints"
    guid = answer(rita, "POST", viewpoints, xeokit_viewpoint(), status=201)["guid"]
    issue = Issue.objects.get(bcf_topic_guid=topic)
    Issue.objects.filter(pk=issue.pk).update(viewpoints=[{**issue.viewpoints[0], "guid": guid.upper()}])
    issue.comments.create(text="see there", author="rita", viewpoint_guid=guid)

    send(rita, "POST", viewpoints, {**xeokit_viewpoint(), "guid": guid}, status=409)
    send(rita, "DELETE", f"{viewpoints}/{guid}", status=409)
    assert [viewpoint["guid"] for viewpoint in answer(rita, "GET", viewpoints)] == [guid.upper()]
