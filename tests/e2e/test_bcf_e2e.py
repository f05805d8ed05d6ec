"""BCF exchange over HTTP on the real processes: issues pinned to real elements of a real sample travel from one
model to another through a .bcfzip."""

import json

import pytest

from tests.helpers import sample
from tests.issues.conftest import png_bytes

pytestmark = pytest.mark.e2e


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
