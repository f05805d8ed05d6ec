"""A clash run as a BCF 3.0 archive (GET .../runs/{runId}/report.bcfzip): every XML file valid against the official
XSDs, one topic per present clash with the pinned issue's topic GUID, its facts, both GlobalIds as components in two
colours, the others hidden, six clipping planes and a camera; read back by the issues' own BCF import."""

from __future__ import annotations

import io
import zipfile
from xml.etree import ElementTree

import pytest

from coordination_app.issue_models import ClashIssue
from coordination_app.models import ClashSighting
from coordination_app.services.runs import run_request
from issues_app.bcf import open_bcf_archive
from tests.coordination.clash_setup import B1, D1, DUCT_D1_LOWERED, federated_project, move_duct, run_test
from tests.issues.bcf_xml import require_testcases, schema_errors, topics

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]


@pytest.fixture
def fed():
    return federated_project()


def report(api, fed, run_id: str):
    return api.get(f"/api/v1/projects/{fed['project'].id}/clash-tests/{fed['test'].name}/runs/{run_id}/report.bcfzip")


def archive_of(response) -> bytes:
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "application/octet-stream"
    return b"".join(response.streaming_content)


def test_the_report_is_valid_bcf_3_with_one_topic_per_present_clash(api, fed):
    require_testcases()
    run = run_test(fed["test"])
    response = report(api, fed, run.id)
    data = archive_of(response)
    assert response["Content-Disposition"] == f'attachment; filename="ducts-beams-{run.id}.bcfzip"'
    assert schema_errors(data) == {}
    read = topics(data)["topics"]
    assert len(read) == 3

    api.post(f"/api/v1/projects/{fed['project'].id}/clash-tests/ducts-beams/runs/{run.id}/issues", {}, format="json")
    assert set(read) == set(ClashIssue.objects.values_list("topic_guid", flat=True))  # the same topics as the pinned issues

    sighting = next(s for s in ClashSighting.objects.filter(run=run).select_related("clash") if {s.clash.a["guid"], s.clash.b["guid"]} == {D1, B1})
    guid = ClashIssue.objects.get(clash_ids=[sighting.clash_id]).topic_guid
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        markup = ElementTree.fromstring(archive.read(f"{guid}/markup.bcf"))
        (view_point,) = markup.find("Topic/Viewpoints")
        visinfo = ElementTree.fromstring(archive.read(f"{guid}/{view_point.findtext('Viewpoint')}"))
    topic = markup.find("Topic")
    assert topic.get("TopicType") == "Clash" and topic.get("TopicStatus") == "Open"
    assert [label.text for label in topic.find("Labels")] == ["Clash", "ducts-beams"]
    for fact in (sighting.clash_id, run.id, D1, B1, "Level 1", f"{sighting.depth * 1000:.0f} mm"):
        assert fact in topic.findtext("Description"), fact
    assert [c.get("IfcGuid") for c in visinfo.find("Components/Selection")] == [D1, B1]
    colours = {colour.get("Color"): [c.get("IfcGuid") for c in colour.find("Components")] for colour in visinfo.find("Components/Coloring")}
    assert colours == {"E8412C": [D1], "2C7BE8": [B1]}
    visibility = visinfo.find("Components/Visibility")
    assert visibility.get("DefaultVisibility") == "false"
    assert [c.get("IfcGuid") for c in visibility.find("Exceptions")] == [D1, B1]
    assert len(visinfo.find("ClippingPlanes")) == 6
    assert visinfo.find("PerspectiveCamera") is not None
    header_files = [f.findtext("Filename") for f in markup.find("Header/Files")]
    assert header_files == ["Services.ifc (v1)", "Structure.ifc (v1)"]

    with open_bcf_archive(io.BytesIO(data)) as opened:  # the issues' import reads it as it reads its own exports
        assert sorted(t.guid for t in opened.topics) == sorted(read)
        assert all(len(t.viewpoints) == 1 and len(t.viewpoints[0]["clipping_planes"]) == 6 for t in opened.topics)


def test_a_run_without_clashes_is_a_valid_empty_report(api, fed):
    require_testcases()
    move_duct(fed["services"], DUCT_D1_LOWERED)
    fed["test"].b = {"models": [fed["structure"].id], "classes": ["IfcSlab"], "exclude": []}  # no slab: nothing to clash with
    fed["test"].save()
    data = archive_of(report(api, fed, run_test(fed["test"]).id))
    assert schema_errors(data) == {} and topics(data)["topics"] == {}


def test_a_run_not_done_is_40900(api, fed):
    response = report(api, fed, run_request(fed["test"]).id)
    assert (response.status_code, response.json()["code"]) == (409, 40900)
