"""BCF exchange over HTTP on the real processes: issues pinned to real elements of a real sample travel from one
model to another through a .bcfzip."""

import io
import json
import zipfile

import pytest

from tests.helpers import sample
from tests.issues.conftest import png_bytes

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(module_stack):
    """One stack for the module: each test uploads its own models."""
    return module_stack


def upload(stack, path) -> str:
    with open(path, "rb") as handle:
        model_id = stack.api("POST", "/api/v1/models", files={"file": (path.name, handle)}).json()["data"]["id"]
    assert stack.wait_model(model_id)["status"] == "ready"
    return model_id


def test_issues_travel_between_models_through_bcf(stack):
    path = sample("IfcOpenHouse_IFC4.ifc")
    source, target = upload(stack, path), upload(stack, path)
    metadata = stack.api("GET", f"/v1/models/{source}/metadata.json").json()
    wall = next(obj for obj in metadata["metaObjects"] if obj["type"].startswith("IfcWall"))
    issue = {"entityId": wall["id"], "entityName": wall["name"], "entityType": wall["type"], "title": "Crack in wall", "comment": "seen on site",
             "camera": {"eye": [8.0, 6.0, 4.0], "look": [0.0, 0.0, 1.0], "up": [0.0, 0.0, 1.0]}}
    png = png_bytes(8, 8)
    created = stack.api("POST", f"/api/v1/models/{source}/issues", data={"issue": json.dumps(issue)}, files={"screenshot": ("s.png", png, "image/png")}).json()["data"]
    assert stack.api("PATCH", f"/api/v1/models/{source}/issues/{created['id']}", json={"status": "checking"}).json()["code"] == 0

    archive = stack.api("GET", f"/api/v1/models/{source}/issues.bcfzip")
    assert archive.status_code == 200 and archive.content[:2] == b"PK"
    report = stack.api("POST", f"/api/v1/models/{target}/issues/bcf", files={"file": ("review.bcfzip", archive.content)}).json()
    assert report["code"] == 0 and report["data"]["skipped"] == [], report
    (imported,) = stack.api("GET", f"/api/v1/models/{target}/issues").json()["data"]
    assert imported["id"] == report["data"]["imported"][0]["issueId"]
    for key in ("entityId", "entityName", "entityType", "title", "comment", "camera", "status", "author", "provenance", "createdAt"):
        assert imported[key] == created[key] or (key == "status" and imported[key] == "checking"), key
    assert stack.api("GET", f"/v1/models/{target}/{imported['screenshot']}").content == png

    not_bcf = stack.api("POST", f"/api/v1/models/{target}/issues/bcf", files={"file": ("x.bcfzip", b"not a zip")}).json()
    assert not_bcf["code"] == 40001 and "not a zip" in not_bcf["message"]
    assert len(stack.api("GET", f"/api/v1/models/{target}/issues").json()["data"]) == 1


def test_an_issue_without_a_camera_exports_a_viewpoint_aimed_at_its_element(stack):
    """As pinned on a drawing: element and snapshot, no camera. The conversion wrote the element's bounds, so the
    export makes a camera that looks at it, and the element is selected in the .bcfv."""
    model_id = upload(stack, sample("AC20-FZK-Haus.ifc"))
    metadata = stack.api("GET", f"/v1/models/{model_id}/metadata.json").json()
    slab = next(obj for obj in metadata["metaObjects"] if obj["type"] == "IfcSlab")
    created = stack.api("POST", f"/api/v1/models/{model_id}/issues", data={"issue": json.dumps({"entityId": slab["id"], "title": "Flashing"})},
                        files={"screenshot": ("s.png", png_bytes(8, 8), "image/png")}).json()
    assert created["code"] == 0, created
    archive = zipfile.ZipFile(io.BytesIO(stack.api("GET", f"/api/v1/models/{model_id}/issues.bcfzip").content))
    (visinfo_name,) = [name for name in archive.namelist() if name.endswith(".bcfv")]
    visinfo = archive.read(visinfo_name).decode()
    assert f'IfcGuid="{slab["id"]}"' in visinfo and "<PerspectiveCamera>" in visinfo


def test_an_official_test_case_on_its_own_model_over_http(stack):
    """buildingSMART's component_selection case on its converted Architectural.ifc: complete viewpoint, element names
    from the real conversion, snapshot served, a comment added over HTTP travels in the schema-valid export, and the
    same export imported again is recognised."""
    from tests.issues import bcf_xml

    bcf_xml.require_testcases()
    model_id = upload(stack, bcf_xml.TESTCASES_DIR / "Architectural.ifc")
    original = (bcf_xml.TESTCASES_DIR / "component_selection.bcf").read_bytes()
    report = stack.api("POST", f"/api/v1/models/{model_id}/issues/bcf", files={"file": ("case.bcf", original)}).json()
    assert report["code"] == 0 and len(report["data"]["imported"]) == 1, report
    (issue,) = stack.api("GET", f"/api/v1/models/{model_id}/issues").json()["data"]
    (viewpoint,) = issue["viewpoints"]
    assert [c["ifc_guid"] for c in viewpoint["components"]["selection"]] == ["0KkZ20so9BsO1d1hFcfLOl", "1XbKhGD91DvhOpYZbhzGTI", "3D9pjHJ0HCnggyepvsht8s"]
    assert issue["entityId"] == "0KkZ20so9BsO1d1hFcfLOl" and issue["entityType"].startswith("Ifc") and issue["entityName"]
    snapshot = stack.api("GET", viewpoint["snapshot"]["snapshot_url"])
    assert snapshot.status_code == 200 and snapshot.content[:8] == b"\x89PNG\r\n\x1a\n"

    exported = stack.api("GET", f"/api/v1/models/{model_id}/issues.bcfzip").content
    assert bcf_xml.schema_errors(exported) == {} and bcf_xml.topics(exported) == bcf_xml.topics(original)
    comments_url = f"/api/v1/models/{model_id}/issues/{issue['id']}/comments"
    added = stack.api("POST", comments_url, json={"text": "Checked on site", "author": "anna", "viewpointGuid": viewpoint["guid"]}).json()
    assert added["code"] == 0, added
    bad = stack.api("POST", comments_url, json={"text": "x", "viewpointGuid": "00000000-0000-4000-8000-000000000000"}).json()
    assert bad["code"] == 40001
    with_comment = stack.api("GET", f"/api/v1/models/{model_id}/issues.bcfzip").content
    assert bcf_xml.schema_errors(with_comment) == {}
    assert b"Checked on site" in zipfile.ZipFile(io.BytesIO(with_comment)).read(f"{issue['topicGuid']}/markup.bcf")
    again = stack.api("POST", f"/api/v1/models/{model_id}/issues/bcf", files={"file": ("again.bcfzip", with_comment)}).json()["data"]
    assert again["imported"] == again["updated"] == [] and again["skipped"][0]["reason"] == f"already imported as issue {issue['id']}"
