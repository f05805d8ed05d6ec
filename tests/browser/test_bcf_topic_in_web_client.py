"""A BCF API topic in the web client and a web client issue through the BCF API, against the real stack in a real
Chromium: a topic a BCF client creates (POST /bcf/3.0/.../topics, a viewpoint with a camera and a selected door, a
comment on that viewpoint; authenticated with the user's personal `bmr_` token) is in the model's issue list with its
title, status and description, its comment is in its details, and opening it puts the viewer's camera at the
viewpoint's eye and selects the door; an issue pinned in the web client on a selected element is a topic whose
viewpoint has the camera the viewer had and that element as its selection."""

from __future__ import annotations

import uuid

import ifcopenshell
import numpy as np
import pytest

from tests.bcfapi.schema_check import BCF, validate
from tests.browser.conftest import open_tab
from tests.e2e.test_bcf_client import PASSWORD, USERNAME, _manage, _personal_session
from tests.helpers import sample

pytestmark = pytest.mark.e2e

CAMERA_JS = """() => { const c = viewerApp.view3d.viewer.camera;
  return { eye: Array.from(c.eye), look: Array.from(c.look), up: Array.from(c.up) }; }"""
EYE_AT_JS = """([eye, tolerance]) => { const e = viewerApp.view3d.viewer.camera.eye;
  return [0, 1, 2].every((i) => Math.abs(e[i] - eye[i]) < tolerance); }"""
TOLERANCE = 1e-3  # metres: the viewpoint is applied without a flight, so the camera is where it says


def z_to_y(vector: dict) -> list[float]:
    """A BCF (IFC, Z up) point or direction in the viewer's Y-up world, as xeokit's BCFViewpointsPlugin maps it."""
    return [vector["x"], vector["z"], -vector["y"]]


def y_to_z(vector) -> list[float]:
    """A point or direction of the viewer's Y-up world as BCF x, y, z."""
    return [vector[0], -vector[2], vector[1]]


def unit(vector) -> np.ndarray:
    vector = np.asarray(vector, dtype=float)
    return vector / np.linalg.norm(vector)


@pytest.fixture(scope="module")
def web_stack(own_web_stack):
    """A stack of its own: the user made here turns accounts on, and her token goes into the stack's session."""
    return own_web_stack


@pytest.fixture(scope="module")
def bcf_project(web_stack):
    """The stack with one user (accounts on), her project with duplex.ifc, and her personal token's session."""
    _manage(web_stack, "user", "create", USERNAME, "--role", "user", "--display-name", "Rita Reviewer", "--password", "-", stdin=PASSWORD + "\n")
    rest = _personal_session(web_stack)
    assert rest.headers["Authorization"].startswith("Bearer bmr_")
    project = rest.post(f"{web_stack.url}/api/v1/chat/projects", json={"title": "Duplex", "kind": "ifc", "skeleton": False}, timeout=60).json()["data"]
    with open(sample("duplex.ifc"), "rb") as handle:
        model = rest.post(f"{web_stack.url}/api/v1/models", data={"projectId": project["projectId"]}, files={"file": ("duplex.ifc", handle)}, timeout=120).json()["data"]
    web_stack.session.headers.update(rest.headers)
    assert web_stack.wait_model(model["id"])["status"] == "ready"
    return {"rest": rest, "project_id": project["projectId"], "model_id": model["id"], "bcf": f"{web_stack.url}/bcf/3.0/projects/{project['projectId']}"}


def bcf(rest, method: str, url: str, schema: str, status: int, body=None):
    """A BCF API call with the personal token; asserts the status and the answer's official schema."""
    response = rest.request(method, url, json=body, timeout=60)
    assert response.status_code == status, (response.status_code, response.text[:1000])
    validate(response.json(), BCF + schema.removesuffix("[]"), is_many=schema.endswith("[]"))
    return response.json()


def signed_in(page, stack):
    """The web client, signed in on its sign-in page as the user."""
    page.page.goto(stack.url + "/")
    page.wait_for_url("**/sign-in?next=*")
    page.fill("[data-testid=sign-in-username]", USERNAME)
    page.fill("[data-testid=sign-in-password]", PASSWORD)
    page.click("[data-testid=sign-in-submit]")
    page.wait_for_function("document.body && document.body.dataset.app === 'ready'", timeout=60_000)
    return page


def test_a_bcf_api_topic_is_in_the_issue_list_and_opening_it_applies_its_viewpoint(page, web_stack, bcf_project):
    rest, base, model_id = bcf_project["rest"], bcf_project["bcf"], bcf_project["model_id"]
    door = ifcopenshell.open(str(sample("duplex.ifc"))).by_type("IfcDoor")[0].GlobalId
    topic_guid, viewpoint_guid = str(uuid.uuid4()), str(uuid.uuid4())
    topic = bcf(rest, "POST", f"{base}/topics", "Collaboration/Topic/topic_GET.json", 201, {
        "guid": topic_guid, "topic_type": "Clash", "topic_status": "In Progress", "title": "Door swings into the stair",
        "priority": "High", "description": "found in the BCF client"})
    assert topic["guid"] == topic_guid and topic["creation_author"] == USERNAME
    camera = {"camera_view_point": {"x": 18.5, "y": -14.25, "z": 9.0}, "camera_direction": {"x": -0.6, "y": 0.7, "z": -0.4},
              "camera_up_vector": {"x": 0.0, "y": 0.0, "z": 1.0}, "field_of_view": 60.0, "aspect_ratio": 1.5}
    bcf(rest, "POST", f"{base}/topics/{topic_guid}/viewpoints", "Collaboration/Viewpoint/viewpoint_GET.json", 201, {
        "guid": viewpoint_guid, "perspective_camera": camera,
        "components": {"selection": [{"ifc_guid": door}], "visibility": {"default_visibility": True}}})
    bcf(rest, "POST", f"{base}/topics/{topic_guid}/comments", "Collaboration/Comment/comment_GET.json", 201,
        {"comment": "please move the door", "viewpoint_guid": viewpoint_guid})

    # the REST API of issues shows the same topic
    (issue,) = [i for i in rest.get(f"{web_stack.url}/api/v1/models/{model_id}/issues", timeout=30).json()["data"] if i["topicGuid"] == topic_guid]
    assert (issue["title"], issue["status"], issue["priority"], issue["author"]) == ("Door swings into the stair", "checking", "High", USERNAME)

    signed_in(page, web_stack)
    open_tab(page, web_stack, model_id, "issues")
    assert page.evaluate("(id) => viewerApp.view3d.has(id)", door)
    item = page.locator(f"[data-testid=issue-item][data-issue-id='{issue['id']}']")
    item.wait_for()
    assert "Door swings into the stair" in item.locator("strong").first.inner_text()
    assert item.locator("[data-testid=issue-status]").input_value() == "checking"
    assert item.locator("[data-testid=issue-type]").inner_text() == "Clash" and item.locator("[data-testid=issue-priority]").inner_text() == "High"
    assert "found in the BCF client" in item.inner_text()
    page.evaluate("viewerApp.view3d.select(null)")
    page.evaluate("viewerApp.view3d.viewer.camera.eye = [500, 500, 500]")  # away from the viewpoint's eye
    page.shot("listed")

    item.locator("[data-testid=issue-open]").click()
    expected_eye = z_to_y(camera["camera_view_point"])
    page.wait_for_function(EYE_AT_JS, arg=[expected_eye, TOLERANCE], timeout=30_000)
    state = page.evaluate(CAMERA_JS)
    assert np.allclose(state["eye"], expected_eye, atol=TOLERANCE), state
    assert np.allclose(unit(np.subtract(state["look"], state["eye"])), unit(z_to_y(camera["camera_direction"])), atol=1e-4), state
    assert page.evaluate("viewerApp.view3d.selectedIds()") == [door]
    comment = page.locator("[data-testid=comment-item]")
    comment.first.wait_for()
    assert comment.count() == 1
    assert comment.locator("[data-testid=comment-body]").inner_text() == "please move the door"
    assert comment.locator("[data-testid=comment-author]").inner_text() == USERNAME
    page.shot("opened")


def test_an_issue_pinned_in_the_web_client_is_a_topic_with_its_camera_and_selection(page, web_stack, bcf_project):
    rest, base, model_id = bcf_project["rest"], bcf_project["bcf"], bcf_project["model_id"]
    window = ifcopenshell.open(str(sample("duplex.ifc"))).by_type("IfcWindow")[0].GlobalId
    signed_in(page, web_stack)
    open_tab(page, web_stack, model_id, "issues")
    page.evaluate("""(id) => { const camera = viewerApp.view3d.viewer.camera;
      camera.eye = [-12.5, 7.25, 21.0]; camera.look = [4.0, 2.0, -3.0]; camera.up = [0, 1, 0];
      viewerApp.view3d.select(id); }""", window)
    assert page.evaluate("viewerApp.view3d.selectedIds()") == [window]
    state = page.evaluate(CAMERA_JS)
    page.fill("[data-testid=issue-title]", "Window sill too low")
    page.click("[data-testid=create-issue]")
    page.locator("[data-testid=issue-item]", has_text="Window sill too low").wait_for()
    page.shot("pinned")

    topics = bcf(rest, "GET", f"{base}/topics", "Collaboration/Topic/topic_GET.json[]", 200)
    (topic,) = [t for t in topics if t["title"] == "Window sill too low"]
    assert topic["creation_author"] == USERNAME and topic["topic_status"] == "Open"
    (listed,) = bcf(rest, "GET", f"{base}/topics/{topic['guid']}/viewpoints", "Collaboration/Viewpoint/viewpoint_GET.json[]", 200)
    viewpoint = bcf(rest, "GET", f"{base}/topics/{topic['guid']}/viewpoints/{listed['guid']}", "Collaboration/Viewpoint/viewpoint_GET.json", 200)
    camera = viewpoint["perspective_camera"]
    assert np.allclose([camera["camera_view_point"][k] for k in "xyz"], y_to_z(state["eye"]), atol=TOLERANCE), camera
    assert np.allclose(unit([camera["camera_direction"][k] for k in "xyz"]), unit(y_to_z(np.subtract(state["look"], state["eye"]))), atol=1e-4), camera
    assert np.allclose(unit([camera["camera_up_vector"][k] for k in "xyz"]), [0, 0, 1], atol=1e-4), camera
    selection = bcf(rest, "GET", f"{base}/topics/{topic['guid']}/viewpoints/{listed['guid']}/selection", "Collaboration/Viewpoint/selection_GET.json", 200)
    assert [c["ifc_guid"] for c in selection["selection"]] == [window]
    visibility = bcf(rest, "GET", f"{base}/topics/{topic['guid']}/viewpoints/{listed['guid']}/visibility", "Collaboration/Viewpoint/visibility_GET.json", 200)
    assert visibility["visibility"]["default_visibility"] is True  # nothing was hidden in the viewer
