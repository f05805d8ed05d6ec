"""The BCF topic fields and viewpoints of issues in POST/PATCH/GET, and the filters of GET issues."""

import base64
import json

import pytest

from issues_app.models import Issue
from models_app.storage import model_dir
from tests.issues.conftest import png_bytes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

GUID = "2O2Fr$t4X7Zf8NOew3FLOH"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x01" * 64
CAMERA = {"camera_view_point": {"x": 10, "y": 5.5, "z": -3}, "camera_direction": {"x": -1, "y": 0, "z": 0}, "camera_up_vector": {"x": 0, "y": 0, "z": 1}, "field_of_view": 55}


def xeokit_viewpoint(**extra):
    """What xeokit's BCFViewpointsPlugin.getViewpoint() returns (no aspect_ratio, translucency hints, inline snapshot)."""
    return {
        "perspective_camera": CAMERA,
        "clipping_planes": [{"location": {"x": 0, "y": 0, "z": 2}, "direction": {"x": 0, "y": 0, "z": -1}}],
        "lines": [{"start_point": {"x": 0, "y": 0, "z": 0}, "end_point": {"x": 1, "y": 1, "z": 1}}],
        "bitmaps": [{"bitmap_type": "png", "bitmap_data": "data:image/png;base64," + base64.b64encode(png_bytes(2, 3)).decode(), "location": {"x": 1, "y": 1, "z": 1},
                     "normal": {"x": 0, "y": 1, "z": 0}, "up": {"x": 0, "y": 0, "z": 1}, "height": 2}],
        "components": {
            "visibility": {"view_setup_hints": {"spaces_visible": False, "space_boundaries_visible": False, "openings_visible": False, "spaces_translucent": False},
                           "exceptions": [{"ifc_guid": GUID, "originating_system": "xeokit"}], "default_visibility": True},
            "coloring": [{"color": "ff0000", "components": [{"ifc_guid": GUID, "authoring_tool_id": "wall-1"}]}],
            "selection": [{"ifc_guid": GUID}],
            "translucency": [],
        },
        "snapshot": {"snapshot_type": "png", "snapshot_data": "data:image/png;base64," + base64.b64encode(png_bytes(4, 4)).decode()},
        **extra,
    }


FIELDS = {
    "title": "Door clearance", "topicType": "Clash", "priority": "High", "labels": ["Doors", "Fire"], "assignedTo": "carol", "dueDate": "2026-05-01T12:00:00Z",
    "stage": "Design", "referenceLinks": ["https://example.com/t/1"], "relatedTopics": ["0a9b7c3e-1111-4222-8333-444444444444"],
    "documentReferences": [{"url": "https://example.com/spec.pdf", "description": "Spec"}],
}


def test_new_fields_default_and_round_trip_through_get(post_issue, model, api):
    plain = post_issue(model.id, {"title": "plain"}).json()["data"]
    assert {k: plain[k] for k in ("topicType", "priority", "labels", "assignedTo", "dueDate", "stage", "referenceLinks", "relatedTopics", "documentReferences", "viewpoints", "modifiedAt", "modifiedAuthor")} == {
        "topicType": "Issue", "priority": "", "labels": [], "assignedTo": "", "dueDate": None, "stage": "", "referenceLinks": [], "relatedTopics": [],
        "documentReferences": [], "viewpoints": [], "modifiedAt": None, "modifiedAuthor": "",
    }
    assert plain["creationAuthor"] == plain["author"] == "local-user" and len(plain["topicGuid"]) == 36
    full = post_issue(model.id, {**FIELDS, "author": "anna"}).json()["data"]
    assert {k: full[k] for k in FIELDS if k != "documentReferences"} == {k: v for k, v in FIELDS.items() if k != "documentReferences"}
    (reference,) = full["documentReferences"]
    assert reference["url"] == "https://example.com/spec.pdf" and reference["description"] == "Spec" and len(reference["guid"]) == 36
    listed = {i["id"]: i for i in api.get(f"/api/v1/models/{model.id}/issues").json()["data"]}
    assert listed[full["id"]] == full and listed[plain["id"]] == plain  # the fast list writes what the serializer writes


def test_a_xeokit_viewpoint_is_stored_with_images_as_urls(post_issue, model, client):
    issue = post_issue(model.id, {"title": "t", "viewpoints": [xeokit_viewpoint()]}).json()["data"]
    (viewpoint,) = issue["viewpoints"]
    assert len(viewpoint["guid"]) == 36
    assert viewpoint["perspective_camera"]["aspect_ratio"] == 1.0  # BCF needs one; xeokit writes none
    assert viewpoint["components"]["visibility"]["view_setup_hints"] == {"spaces_visible": False, "space_boundaries_visible": False, "openings_visible": False}
    assert "translucency" not in viewpoint["components"]
    assert viewpoint["snapshot"]["snapshot_type"] == "png" and viewpoint["snapshot"]["snapshot_url"].startswith(f"/v1/models/{model.id}/issues/{issue['id']}-")
    assert b"".join(client.get(viewpoint["snapshot"]["snapshot_url"]).streaming_content) == png_bytes(4, 4)
    assert b"".join(client.get(viewpoint["bitmaps"][0]["bitmap_url"]).streaming_content) == png_bytes(2, 3)
    assert issue["screenshot"] == "issues/" + viewpoint["snapshot"]["snapshot_url"].rsplit("/", 1)[1]
    assert issue["camera"] == {"eye": [10.0, 5.5, -3.0], "look": [9.0, 5.5, -3.0], "up": [0.0, 0.0, 1.0]}


def test_the_screenshot_part_becomes_the_first_viewpoints_snapshot(post_issue, model):
    viewpoint = xeokit_viewpoint()
    del viewpoint["snapshot"]
    issue = post_issue(model.id, {"title": "t", "viewpoints": [viewpoint]}, ("s.png", png_bytes(), "image/png")).json()["data"]
    assert issue["screenshot"] == f"issues/{issue['id']}.png"
    assert issue["viewpoints"][0]["snapshot"] == {"snapshot_type": "png", "snapshot_url": f"/v1/models/{model.id}/issues/{issue['id']}.png"}
    both = post_issue(model.id, {"title": "t", "viewpoints": [xeokit_viewpoint()]}, ("s.png", png_bytes(), "image/png"))
    assert both.json()["code"] == 40001 and "not both" in both.json()["message"]


def test_patch_changes_topic_fields_and_viewpoints_and_keeps_echoed_images(post_issue, model, api):
    issue = post_issue(model.id, {"title": "t", "viewpoints": [xeokit_viewpoint()]}).json()["data"]
    url = f"/api/v1/models/{model.id}/issues/{issue['id']}"
    echoed = api.patch(url, issue, format="json").json()["data"]
    assert echoed == issue  # echoing the record changes nothing
    changed = api.patch(url, {"priority": "Low", "labels": ["x"], "dueDate": None, "modifiedAuthor": "bob"}, format="json").json()["data"]
    assert (changed["priority"], changed["labels"], changed["modifiedAuthor"]) == ("Low", ["x"], "bob") and changed["modifiedAt"]
    old_files = {p.name for p in (model_dir(model.id) / "issues").iterdir()}
    viewpoint = {**changed["viewpoints"][0], "lines": []}
    second = xeokit_viewpoint(snapshot={"snapshot_type": "jpg", "snapshot_data": base64.b64encode(JPEG).decode()})
    result = api.patch(url, {"viewpoints": [viewpoint, second]}, format="json").json()["data"]
    assert result["viewpoints"][0]["lines"] == [] and result["viewpoints"][0]["snapshot"] == issue["viewpoints"][0]["snapshot"]
    assert result["viewpoints"][1]["snapshot"]["snapshot_type"] == "jpg"
    assert {p.name for p in (model_dir(model.id) / "issues").iterdir()} >= old_files
    dropped = api.patch(url, {"viewpoints": [result["viewpoints"][1]]}, format="json").json()["data"]
    assert dropped["screenshot"] == ""  # the first viewpoint's snapshot is a JPEG now
    remaining = {p.name for p in (model_dir(model.id) / "issues").iterdir()}
    assert remaining == {u.rsplit("/", 1)[1] for vp in dropped["viewpoints"] for u in [vp["snapshot"]["snapshot_url"], *(b["bitmap_url"] for b in vp["bitmaps"])]}


@pytest.mark.parametrize(
    "viewpoint, message",
    [
        ({}, "exactly one of perspective_camera and orthogonal_camera"),
        ({"perspective_camera": {**CAMERA, "field_of_view": 180}}, "field_of_view: must be less than 180"),
        ({"perspective_camera": {**CAMERA, "camera_direction": {"x": 0, "y": 0, "z": 0}}}, "zero vector"),
        ({"perspective_camera": {**CAMERA, "camera_view_point": {"x": 1, "y": "2", "z": 3}}}, "camera_view_point.y: must be a finite number"),
        ({"perspective_camera": CAMERA, "orthogonal_camera": {**{k: v for k, v in CAMERA.items() if k != "field_of_view"}, "view_to_world_scale": 3}}, "exactly one"),
        ({"perspective_camera": CAMERA, "guid": "ABC"}, "guid: must be a lowercase UUID"),
        ({"perspective_camera": CAMERA, "components": {"selection": [{"ifc_guid": "too-short"}]}}, "selection[0].ifc_guid"),
        ({"perspective_camera": CAMERA, "components": {"selection": [{"originating_system": "x"}]}}, "needs ifc_guid or authoring_tool_id"),
        ({"perspective_camera": CAMERA, "components": {"coloring": [{"color": "red", "components": [{"ifc_guid": GUID}]}]}}, "color: must be 6 or 8 hex digits"),
        ({"perspective_camera": CAMERA, "components": {"coloring": [{"color": "ff0000", "components": []}]}}, "needs at least one component"),
        ({"perspective_camera": CAMERA, "lines": [{"start_point": {"x": 0, "y": 0, "z": 0}}]}, "missing end_point"),
        ({"perspective_camera": CAMERA, "snapshot": {"snapshot_type": "png", "snapshot_data": "!!!"}}, "not valid base64"),
        ({"perspective_camera": CAMERA, "snapshot": {"snapshot_type": "png", "snapshot_data": base64.b64encode(JPEG).decode()}}, "the data is a JPG image"),
        ({"perspective_camera": CAMERA, "snapshot": {"snapshot_type": "png", "snapshot_data": base64.b64encode(b"GIF89a....").decode()}}, "neither a PNG nor a JPEG"),
        ({"perspective_camera": CAMERA, "snapshot": {"snapshot_url": "/v1/models/m_0000000000000000/issues/i_000000000000.png"}}, "is not an image of this issue"),
        ({"perspective_camera": CAMERA, "bitmaps": [{"bitmap_type": "png", "location": {"x": 0, "y": 0, "z": 0}, "normal": {"x": 0, "y": 0, "z": 1}, "up": {"x": 0, "y": 1, "z": 0}, "height": 1}]}, "needs bitmap_data"),
        ({"perspective_camera": CAMERA, "colour": 1}, "unknown key(s) colour"),
    ],
)
def test_bad_viewpoints_are_40001_and_store_nothing(post_issue, model, viewpoint, message):
    response = post_issue(model.id, {"title": "t", "viewpoints": [viewpoint]})
    assert (response.status_code, response.json()["code"]) == (400, 40001), response.json()
    assert message in response.json()["message"]
    assert Issue.objects.count() == 0
    assert not (model_dir(model.id) / "issues").exists() or not list((model_dir(model.id) / "issues").iterdir())


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"labels": "Doors"}, "labels"), ({"labels": ["x" * 256]}, "labels"), ({"dueDate": "next week"}, "dueDate"),
        ({"relatedTopics": ["i_0123456789ab"]}, "lowercase UUID"), ({"documentReferences": [{"description": "no target"}]}, "either url or documentGuid"),
        ({"documentReferences": [{"documentGuid": "b1d1b7f0-60b9-457d-ad12-16e0fb997bc5"}]}, "not stored with this model"),
        ({"viewpoints": [{"perspective_camera": CAMERA, "guid": "5d7e1f8a-0000-4000-8000-00000000000a"}, {"perspective_camera": CAMERA, "guid": "5d7e1f8a-0000-4000-8000-00000000000a"}]}, "appears more than once"),
        ({"priority": 3}, "priority"), ({"topicType": ""}, "topicType"),
    ],
)
def test_bad_topic_fields_in_a_patch_change_nothing(post_issue, model, api, fields, message):
    issue = post_issue(model.id, {**FIELDS, "viewpoints": [xeokit_viewpoint()]}).json()["data"]
    files = sorted(p.name for p in (model_dir(model.id) / "issues").iterdir())
    response = api.patch(f"/api/v1/models/{model.id}/issues/{issue['id']}", fields, format="json")
    assert (response.status_code, response.json()["code"]) == (400, 40001), response.json()
    assert message in response.json()["message"]
    assert api.get(f"/api/v1/models/{model.id}/issues").json()["data"] == [issue]
    assert sorted(p.name for p in (model_dir(model.id) / "issues").iterdir()) == files


def test_filters(post_issue, model, api):
    a = post_issue(model.id, {"title": "Door too narrow", "priority": "High", "labels": ["Doors"], "assignedTo": "carol", "topicType": "Clash"}).json()["data"]
    b = post_issue(model.id, {"title": "Wall 100% done", "comment": "fire rating", "labels": ["Walls", "Fire"], "entityId": GUID}).json()["data"]
    api.patch(f"/api/v1/models/{model.id}/issues/{b['id']}", {"status": "resolved"}, format="json")

    def ids(query):
        response = api.get(f"/api/v1/models/{model.id}/issues?{query}")
        assert response.status_code == 200, response.json()
        return [i["id"] for i in response.json()["data"]]

    assert ids("") == [b["id"], a["id"]]
    assert ids("status=resolved") == [b["id"]] and ids("status=open") == [a["id"]]
    assert ids("priority=High") == [a["id"]] and ids("assignedTo=carol") == [a["id"]] and ids("topicType=Issue") == [b["id"]]
    assert ids("label=Fire") == [b["id"]]
    assert ids("label=Fir") == []
    assert ids("label=Doors&status=resolved") == []
    assert ids("q=FIRE") == [b["id"]] and ids("q=100%25") == [b["id"]] and ids("q=%25") == [b["id"]] and ids("q=Door_too") == [] and ids("q=Door too") == [a["id"]]
    assert ids(f"entityId={GUID}") == [b["id"]] and ids(f"q={a['id']}") == [a["id"]]
    bad = api.get(f"/api/v1/models/{model.id}/issues?status=closed")
    assert (bad.status_code, bad.json()["code"]) == (400, 40001) and "status" in bad.json()["message"]
    assert ids("status=open") == [a["id"]]  # a filtered list is cached by its filters
    api.patch(f"/api/v1/models/{model.id}/issues/{a['id']}", {"status": "checking"}, format="json")
    assert ids("status=open") == []


def test_the_issue_part_may_carry_a_snapshot_larger_than_one_megabyte(api, model):
    big = png_bytes(padding=2 * 1024 * 1024)
    viewpoint = xeokit_viewpoint(snapshot={"snapshot_type": "png", "snapshot_data": base64.b64encode(big).decode()})
    response = api.post(f"/api/v1/models/{model.id}/issues", {"issue": json.dumps({"title": "t", "viewpoints": [viewpoint]})}, format="multipart")
    assert response.json()["code"] == 0, response.json()
    url = response.json()["data"]["viewpoints"][0]["snapshot"]["snapshot_url"]
    assert (model_dir(model.id) / "issues" / url.rsplit("/", 1)[1]).read_bytes() == big
