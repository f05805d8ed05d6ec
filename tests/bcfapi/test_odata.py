"""The OData subset of the BCF API lists (bcfapi_app/odata.py): the parser on its own, then GET topics with the
spec's own example queries, $orderby and the paging headers."""

from __future__ import annotations

import datetime
import uuid

import pytest

from bcfapi_app import odata
from core.errors import Invalid
from issues_app.models import Issue
from tests.bcfapi import topic_helpers
from tests.bcfapi.topic_helpers import answer, send

team = topic_helpers.team
FIELDS = {"title": odata.TEXT, "topic_status": odata.TEXT, "creation_date": odata.DATETIME, "labels": odata.LIST, "assigned_to": odata.TEXT}
ROWS = [
    {"title": "a", "topic_status": "Open", "creation_date": "2015-12-04T10:00:00Z", "labels": ["Architecture"], "assigned_to": "Architect@example.com"},
    {"title": "b", "topic_status": "Open", "creation_date": "2015-12-06T10:00:00Z", "labels": ["Heating", "Structural"], "assigned_to": "Architect@example.com"},
    {"title": "c", "topic_status": "Closed", "creation_date": "2016-01-01T00:00:00Z", "labels": [], "assigned_to": None},
    {"title": "it's", "topic_status": "Open", "creation_date": "2015-12-05T00:30:00Z", "labels": ["Electrical"], "assigned_to": "other"},
]


def titles(text: str) -> list[str]:
    keep = odata.filter_predicate(text, FIELDS)
    return [row["title"] for row in ROWS if keep(row)]


@pytest.mark.parametrize(("text", "expected"), [
    ("assigned_to eq 'Architect@example.com' and topic_status eq 'Open' and creation_date gt 2015-12-05T00:00:00+01:00", ["b"]),
    ("labels/any(label: label eq 'Architecture') or labels/any(label: label eq 'Structural') or labels/any(label: label eq 'Heating')", ["a", "b"]),
    ("not (topic_status eq 'Open')", ["c"]),
    ("topic_status ne 'Open' or title eq 'a'", ["a", "c"]),
    ("creation_date ge 2015-12-05T00:30:00", ["b", "c", "it's"]),  # no zone: UTC (Foundation 1.7)
    ("creation_date lt 2015-12-05", ["a"]),
    ("title eq 'it''s'", ["it's"]),
    ("assigned_to eq null", ["c"]),
    ("(topic_status eq 'Open' and (title eq 'a' or title eq 'b')) or topic_status eq 'Closed'", ["a", "b", "c"]),
    ("labels/any(x: x eq 'Heating' and x ne 'Structural')", ["b"]),
    ("", ["a", "b", "c", "it's"]),
])
def test_filters_select_the_rows_the_spec_means(text, expected):
    assert titles(text) == expected


@pytest.mark.parametrize(("text", "named"), [
    ("colour eq 'red'", "unknown field colour"),
    ("title like 'a'", "unknown operator like"),
    ("contains(title, 'a')", "function contains"),
    ("labels eq 'a'", "labels is a list"),
    ("title/any(x: x eq 'a')", "only a list's any"),
    ("title eq 'a' and", "expected name"),
    ("title eq 'a')", "unexpected ')'"),
    ("title eq 'unclosed", "unexpected"),
    ("creation_date gt 2015-13-45T00:00:00Z", "not an ISO 8601"),
    ("(" * 60 + "title eq 'a'" + ")" * 60, "nested too deeply"),
])
def test_bad_filters_are_refused_naming_what_is_wrong(text, named):
    with pytest.raises(Invalid) as refused:
        titles(text)
    assert named in str(refused.value)


def test_orderby_sorts_by_named_fields_and_refuses_others():
    sortable = {"creation_date": odata.DATETIME, "title": odata.TEXT}
    assert [row["title"] for row in odata.ordered(ROWS, "creation_date desc", sortable, "title")] == ["c", "b", "it's", "a"]
    assert [row["title"] for row in odata.ordered(ROWS, None, sortable, "creation_date")] == ["a", "it's", "b", "c"]
    for bad in ("modified_date", "title up", "title asc extra"):
        with pytest.raises(Invalid):
            odata.ordered(ROWS, bad, sortable, "title")


@pytest.mark.django_db
def test_get_topics_filters_orders_and_pages(team):
    rita = team.clients["rita"]
    made = []
    for index, (status, labels) in enumerate([("Open", ["MEP"]), ("Resolved", ["ARC"]), ("Open", ["ARC", "MEP"]), ("In Progress", [])]):
        made.append(answer(rita, "POST", f"{team.base}/topics", {"title": f"t{index}", "topic_status": status, "labels": labels}, status=201)["guid"])
    base = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    for index, guid in enumerate(made):
        Issue.objects.filter(bcf_topic_guid=guid).update(created_at=base + datetime.timedelta(days=index))
    listed = "Collaboration/Topic/topic_GET.json[]"

    def titles_of(query: str) -> list[str]:
        return [topic["title"] for topic in answer(rita, "GET", f"{team.base}/topics?{query}", schema=listed)]

    assert titles_of("") == ["t0", "t1", "t2", "t3"]  # creation_date ascending
    assert titles_of("$filter=topic_status eq 'Open'") == ["t0", "t2"]
    assert titles_of("$filter=labels/any(l: l eq 'ARC')&$orderby=creation_date desc") == ["t2", "t1"]
    assert titles_of("$filter=creation_date gt 2026-01-02T12:00:00Z and creation_author eq 'rita'") == ["t2", "t3"]
    assert titles_of("$filter=modified_date eq null") == ["t0", "t1", "t2", "t3"]
    assert titles_of("project_id=ignored&$orderby=server_assigned_id") == sorted(titles_of(""), key=lambda t: Issue.objects.get(title=t).id)

    page = send(rita, "GET", f"{team.base}/topics?$top=2&$skip=1", schema=listed)
    assert [topic["title"] for topic in page.json()] == ["t1", "t2"]
    assert page["X-Total-Count"] == "4" and 'rel="next"' in page["Link"] and "%24skip=3" in page["Link"]
    last = send(rita, "GET", f"{team.base}/topics?$top=2&$skip=2", schema=listed)
    assert last["X-Total-Count"] == "4" and not last.has_header("Link")
    assert "unknown field" in answer(rita, "GET", f"{team.base}/topics?$filter=colour eq 'red'", status=400)["message"]
    assert "$orderby" in answer(rita, "GET", f"{team.base}/topics?$orderby=title", status=400)["message"]
    assert "$top" in answer(rita, "GET", f"{team.base}/topics?$top=501", status=400)["message"]
    assert str(uuid.UUID(made[0])) == made[0]
