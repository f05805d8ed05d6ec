"""BCF API 3.0 viewpoints: immutable (no PUT); a viewpoint as xeokit's BCFViewpointsPlugin writes it comes back
unchanged (camera, clipping planes, components through their routes); snapshot and bitmaps as images; visibility
with default_visibility false when the viewpoint says nothing; a viewpoint a comment points at is not deleted."""

from __future__ import annotations

import base64
import copy
import json
import uuid

import pytest

from bcfapi_app.viewpoint_views import ViewpointDetailView
from tests.bcfapi import topic_helpers
from tests.bcfapi.topic_helpers import answer, png_b64, send, xeokit_viewpoint
from tests.issues.conftest import png_bytes

pytestmark = pytest.mark.django_db
team = topic_helpers.team

VIEWPOINT = "Collaboration/Viewpoint/viewpoint_GET.json"
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\x00" * 32).decode()


def new_topic(team) -> str:
    return answer(team.clients["rita"], "POST", f"{team.base}/topics", {"title": "Beam"}, status=201)["guid"]


def test_a_xeokit_viewpoint_comes_back_unchanged(team):
    rita = team.clients["rita"]
    viewpoints = f"{team.base}/topics/{new_topic(team)}/viewpoints"
    sent = xeokit_viewpoint()
    made = answer(rita, "POST", viewpoints, sent, VIEWPOINT, status=201)
    assert str(uuid.UUID(made["guid"])) == made["guid"]
    for key in ("perspective_camera", "lines", "clipping_planes", "bitmaps"):
        assert made[key] == sent[key], key
    assert made["snapshot"] == {"snapshot_type": "png"} and "components" not in made and "orthogonal_camera" not in made
    path = f"{viewpoints}/{made['guid']}"
    assert answer(rita, "GET", path, schema=VIEWPOINT) == made
    assert answer(rita, "GET", viewpoints, schema=VIEWPOINT + "[]") == [made]
    components = sent["components"]
    assert answer(rita, "GET", f"{path}/selection", schema="Collaboration/Viewpoint/selection_GET.json") == {"selection": components["selection"]}
    assert answer(rita, "GET", f"{path}/coloring", schema="Collaboration/Viewpoint/coloring_GET.json") == {"coloring": components["coloring"]}
    assert answer(rita, "GET", f"{path}/visibility", schema="Collaboration/Viewpoint/visibility_GET.json") == {"visibility": components["visibility"]}
    snapshot = send(rita, "GET", f"{path}/snapshot")
    assert snapshot["Content-Type"] == "image/png" and b"".join(snapshot.streaming_content) == png_bytes()
    # rebuilt as the plugin's setViewpoint() reads it: the same viewpoint
    rebuilt = {**{key: made[key] for key in ("perspective_camera", "lines", "clipping_planes", "bitmaps")}, "components": {
        "selection": answer(rita, "GET", f"{path}/selection")["selection"], "coloring": answer(rita, "GET", f"{path}/coloring")["coloring"],
        "visibility": answer(rita, "GET", f"{path}/visibility")["visibility"]}}
    expected = copy.deepcopy(sent)
    del expected["snapshot"]
    assert rebuilt == expected


def test_a_web_client_viewpoint_is_read_with_its_camera_and_components(team):
    rita = team.clients["rita"]
    viewpoint = {**xeokit_viewpoint(), "guid": str(uuid.uuid4())}
    made = rita.post(f"/api/v1/models/{team.model.id}/issues", {"issue": json.dumps({"title": "web", "viewpoints": [viewpoint]})}).json()["data"]
    path = f"{team.base}/topics/{made['topicGuid']}/viewpoints/{viewpoint['guid']}"
    read = answer(rita, "GET", path, schema=VIEWPOINT)
    assert read["perspective_camera"] == viewpoint["perspective_camera"] and read["clipping_planes"] == viewpoint["clipping_planes"]
    assert answer(rita, "GET", f"{path}/selection")["selection"] == viewpoint["components"]["selection"]
    assert answer(rita, "GET", f"{path}/visibility")["visibility"] == viewpoint["components"]["visibility"]


def test_visibility_defaults_to_hidden_when_the_viewpoint_says_nothing(team):
    rita = team.clients["rita"]
    viewpoints = f"{team.base}/topics/{new_topic(team)}/viewpoints"
    bare_camera = {"orthogonal_camera": {"camera_view_point": {"x": 0, "y": 0, "z": 10}, "camera_direction": {"x": 0, "y": 0, "z": -1},
                                         "camera_up_vector": {"x": 0, "y": 1, "z": 0}, "view_to_world_scale": 25.0, "aspect_ratio": 1.0}}
    made = answer(rita, "POST", viewpoints, bare_camera, VIEWPOINT, status=201)
    assert made["orthogonal_camera"]["view_to_world_scale"] == 25.0 and "snapshot" not in made
    path = f"{viewpoints}/{made['guid']}"
    assert answer(rita, "GET", f"{path}/visibility") == {"visibility": {"default_visibility": False, "exceptions": []}}
    assert answer(rita, "GET", f"{path}/selection") == {"selection": []}
    assert answer(rita, "GET", f"{path}/coloring") == {"coloring": []}
    send(rita, "GET", f"{path}/snapshot", status=404)
    partial = {**bare_camera, "components": {"visibility": {"exceptions": [{"ifc_guid": "3cUkl32yn9qRSPvBJVyWYp"}]}}}
    made = answer(rita, "POST", viewpoints, partial, VIEWPOINT, status=201)
    assert answer(rita, "GET", f"{viewpoints}/{made['guid']}/visibility")["visibility"] == {"default_visibility": False, "exceptions": [{"ifc_guid": "3cUkl32yn9qRSPvBJVyWYp"}]}


def test_bitmaps_have_guids_and_are_served_as_images(team):
    rita = team.clients["rita"]
    viewpoints = f"{team.base}/topics/{new_topic(team)}/viewpoints"
    placement = {"location": {"x": 1, "y": 2, "z": 3}, "normal": {"x": 0, "y": 0, "z": 1}, "up": {"x": 0, "y": 1, "z": 0}, "height": 2.5}
    body = {**xeokit_viewpoint(), "bitmaps": [{"bitmap_type": "png", "bitmap_data": png_b64(4), **placement}, {"bitmap_type": "jpg", "bitmap_data": JPEG, **placement}]}
    made = answer(rita, "POST", viewpoints, body, VIEWPOINT, status=201)
    assert [bitmap["bitmap_type"] for bitmap in made["bitmaps"]] == ["png", "jpg"]
    assert made["bitmaps"][0]["location"] == {"x": 1.0, "y": 2.0, "z": 3.0} and made["bitmaps"][0]["height"] == 2.5
    first, second = (bitmap["guid"] for bitmap in made["bitmaps"])
    assert first != second and answer(rita, "GET", f"{viewpoints}/{made['guid']}")["bitmaps"] == made["bitmaps"]
    png = send(rita, "GET", f"{viewpoints}/{made['guid']}/bitmaps/{first}")
    assert png["Content-Type"] == "image/png" and b"".join(png.streaming_content) == png_bytes(4)
    assert send(rita, "GET", f"{viewpoints}/{made['guid']}/bitmaps/{second}")["Content-Type"] == "image/jpeg"
    send(rita, "GET", f"{viewpoints}/{made['guid']}/bitmaps/{uuid.uuid4()}", status=404)


def test_viewpoints_are_immutable_and_deleted_only_without_a_comment(team):
    rita = team.clients["rita"]
    topic = new_topic(team)
    viewpoints = f"{team.base}/topics/{topic}/viewpoints"
    guid = str(uuid.uuid4())
    answer(rita, "POST", viewpoints, {**xeokit_viewpoint(), "guid": guid}, VIEWPOINT, status=201)
    assert "exists already" in answer(rita, "POST", viewpoints, {**xeokit_viewpoint(), "guid": guid}, status=409)["message"]
    assert answer(rita, "GET", f"{team.base}/topics/{topic}")["modified_date"]  # a floating viewpoint changes the topic
    assert not hasattr(ViewpointDetailView, "put")  # no PUT: a viewpoint never changes
    comment = answer(rita, "POST", f"{team.base}/topics/{topic}/comments", {"comment": "see", "viewpoint_guid": guid}, status=201)
    assert answer(rita, "GET", f"{viewpoints}/{guid}?includeAuthorization=true")["authorization"] == {"viewpoint_actions": []}
    assert "comment" in answer(rita, "DELETE", f"{viewpoints}/{guid}", status=409)["message"]
    send(rita, "DELETE", f"{team.base}/topics/{topic}/comments/{comment['guid']}")
    assert answer(rita, "GET", f"{viewpoints}/{guid}?includeAuthorization=true")["authorization"] == {"viewpoint_actions": ["delete"]}
    send(team.clients["vera"], "DELETE", f"{viewpoints}/{guid}", status=403)
    send(rita, "DELETE", f"{viewpoints}/{guid}")
    send(rita, "GET", f"{viewpoints}/{guid}", status=404)


def test_bad_viewpoints_are_refused_naming_the_key(team):
    rita = team.clients["rita"]
    viewpoints = f"{team.base}/topics/{new_topic(team)}/viewpoints"
    no_camera = {key: value for key, value in xeokit_viewpoint().items() if key != "perspective_camera"}
    assert "perspective_camera" in answer(rita, "POST", viewpoints, no_camera, status=400)["message"]
    bad_colour = xeokit_viewpoint()
    bad_colour["components"]["coloring"][0]["color"] = "red"
    assert "coloring[0].color" in answer(rita, "POST", viewpoints, bad_colour, status=400)["message"]
    assert "snapshot" in answer(rita, "POST", viewpoints, {**xeokit_viewpoint(), "snapshot": {"snapshot_type": "png", "snapshot_data": "bm90IGFuIGltYWdl"}}, status=400)["message"]
    assert "guid" in answer(rita, "POST", viewpoints, {**xeokit_viewpoint(), "guid": "nope"}, status=400)["message"]


def test_a_viewpoint_with_a_snapshot_near_the_5_mb_limit_is_taken(team):
    rita = team.clients["rita"]
    viewpoints = f"{team.base}/topics/{new_topic(team)}/viewpoints"
    large = png_bytes(padding=4_900_000)
    body = {**xeokit_viewpoint(), "snapshot": {"snapshot_type": "png", "snapshot_data": base64.b64encode(large).decode()}}
    made = answer(rita, "POST", viewpoints, body, VIEWPOINT, status=201)
    assert b"".join(send(rita, "GET", f"{viewpoints}/{made['guid']}/snapshot").streaming_content) == large
