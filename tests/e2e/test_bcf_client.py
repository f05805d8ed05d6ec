"""A real BCF API client against the running stack: IfcOpenShell's `bcf.v3.bcfapi` (bcf-client 0.9.0) discovers the
service, signs its user in through the OAuth2 authorization-code flow (the sign-in and consent pages answered as a
browser would: cookies, CSRF token, form posts), lists the projects and works on a topic with a comment and a
viewpoint; the same topic is the issue the REST API of issues shows.

The client's quirks (docs/decisions/0010 section 8): its sign-in listens on port 8080 (fixed) for the redirect, and
opens the consent page with `webbrowser.open`, replaced here by a thread that plays the browser; `get_topics` and
`get_comments` are stubs (`client.get(path)` instead); `get()` answers None for anything but 200; both refresh
methods call `.json()` on a dict (the refresh request is sent here as `get_new_access_token` would send it).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import uuid
from html import unescape
from urllib.parse import urljoin

import pytest
import requests
from bcf.v3 import bcfapi

from tests.e2e.stack import ROOT, Stack
from tests.helpers import sample

pytestmark = pytest.mark.e2e
USERNAME, PASSWORD = "rita", "a long enough password for rita"
CALLBACK_PORT = 8080  # bcf-client's fixed redirect listener
REDIRECT_URI = f"http://localhost:{CALLBACK_PORT}/callback"


def _manage(stack: Stack, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=stack.env, input=stdin, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _hidden_inputs(page: str) -> dict[str, str]:
    fields = {}
    for tag in re.findall(r'<input[^>]*type="hidden"[^>]*>', page):
        name, value = re.search(r'name="([^"]*)"', tag), re.search(r'value="([^"]*)"', tag)
        if name:
            fields[name.group(1)] = unescape(value.group(1)) if value else ""
    return fields


class Browser:
    """What the user's browser does when the client opens the consent URL: sign in on the sign-in page, allow on the
    consent page, follow the redirect to the client's listener. Runs in a thread (the client blocks listening)."""

    def __init__(self):
        self.pages: list[str] = []
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None

    def open(self, url: str, *args, **kwargs) -> bool:
        self.thread = threading.Thread(target=self._drive, args=(url,), daemon=True)
        self.thread.start()
        return True

    def _drive(self, url: str) -> None:
        try:
            session = requests.Session()
            sign_in = session.get(url, timeout=30)  # signed out: redirected to the sign-in page (?next= the consent page)
            assert sign_in.status_code == 200 and "/sign-in" in sign_in.url, sign_in.url
            self.pages.append(sign_in.text)
            fields = _hidden_inputs(sign_in.text)
            consent = session.post(urljoin(sign_in.url, "/sign-in"), data={**fields, "username": USERNAME, "password": PASSWORD},
                                   headers={"Referer": sign_in.url}, timeout=30)
            assert consent.status_code == 200 and "/foundation/oauth2/authorize" in consent.url, (consent.status_code, consent.url)
            self.pages.append(consent.text)
            answer = session.post(consent.url, data={**_hidden_inputs(consent.text), "allow": "Authorize"},
                                  headers={"Referer": consent.url}, allow_redirects=False, timeout=30)
            assert answer.status_code == 302 and answer.headers["Location"].startswith(REDIRECT_URI), (answer.status_code, answer.text[:300])
            requests.get(answer.headers["Location"], timeout=30)  # the client's listener takes the code
        except BaseException as error:  # reported by the test after the client returns
            self.error = error
            try:
                requests.get(f"{REDIRECT_URI}?error=browser_failed", timeout=5)  # unblock the client's listener
            except requests.RequestException:
                pass


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server binds (a TIME_WAIT left by a run is no owner)
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True


@pytest.fixture
def bcf_stack(tmp_path):
    assert _port_free(CALLBACK_PORT), f"port {CALLBACK_PORT} is taken: bcf-client's sign-in listens there (fixed)"
    stack = Stack(tmp_path, workers=1)
    stack.migrate()
    _manage(stack, "user", "create", USERNAME, "--role", "user", "--display-name", "Rita Reviewer", "--password", "-", stdin=PASSWORD + "\n")
    stack.start_gateway()
    stack.start_workers()
    yield stack
    stack.stop()


def _personal_session(stack: Stack) -> requests.Session:
    answer = requests.post(f"{stack.url}/api/v1/auth/tokens", json={"name": "setup", "scope": "write", "username": USERNAME, "password": PASSWORD}, timeout=60)
    assert answer.status_code == 200, answer.text
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {answer.json()['data']['token']}"
    return session


def test_bcf_client_signs_in_with_oauth2_lists_projects_and_works_on_a_topic(bcf_stack, monkeypatch):
    stack = bcf_stack
    rest = _personal_session(stack)
    project = rest.post(f"{stack.url}/api/v1/chat/projects", json={"title": "Tower", "kind": "ifc", "skeleton": False}, timeout=60).json()["data"]
    with open(sample("IfcOpenHouse_IFC4.ifc"), "rb") as handle:
        model = rest.post(f"{stack.url}/api/v1/models", data={"projectId": project["projectId"]}, files={"file": ("house.ifc", handle)}, timeout=120).json()["data"]
    stack.session.headers.update(rest.headers)
    assert stack.wait_model(model["id"])["status"] == "ready"

    # the operator registers the client (DOT's command; the secret is given here, shown once otherwise)
    client_id, secret = "bcf-client-e2e", uuid.uuid4().hex + uuid.uuid4().hex
    created = _manage(stack, "createapplication", "confidential", "authorization-code", "--name", "IfcOpenShell bcf-client",
                      "--client-id", client_id, "--client-secret", secret, "--redirect-uris", REDIRECT_URI)
    assert client_id in created or "created" in created.lower()

    browser = Browser()
    monkeypatch.setattr(bcfapi.webbrowser, "open", browser.open)
    foundation = bcfapi.FoundationClient(client_id, secret, base_url=stack.url + "/", redirect_subdir="callback")
    assert foundation.get_auth_methods() == ["authorization_code_grant"]
    versions = foundation.get_versions()
    bcf30 = next(v for v in versions if v["api_id"] == "bcf" and v["version_id"] == "3.0")
    assert bcf30["api_base_url"] == f"{stack.url}/bcf/3.0"

    client = bcfapi.BcfClient(foundation)
    client.set_version(bcf30)
    projects = client.get_projects()  # the first call signs in (login() through the browser thread)
    browser.thread.join(30)
    assert browser.error is None, browser.error
    assert "Sign in" in browser.pages[0] and "IfcOpenShell bcf-client" in browser.pages[1] and USERNAME in browser.pages[1]
    assert foundation.access_token.startswith("bmo_") and foundation.refresh_token.startswith("bmo_")
    assert projects == [{"project_id": project["projectId"], "name": "Tower", "authorization": {"project_actions": ["update", "createTopic", "createDocument"]}}]
    assert client.get_project(project["projectId"])["name"] == "Tower"
    extensions = client.get_extensions(project["projectId"])
    assert extensions["users"] == [USERNAME] and "createComment" in extensions["topic_actions"]

    # refresh: the request get_new_access_token sends (HTTP Basic + form), its answer read by the client's own
    # set_tokens_from_response (both refresh methods of bcf-client 0.9.0 call .json() on a dict upstream)
    old_access = foundation.access_token
    foundation.set_tokens_from_response(requests.post(foundation.token_endpoint, data={"grant_type": "refresh_token", "refresh_token": foundation.refresh_token},
                                                      headers=foundation._get_access_token_headers(), timeout=30))
    assert foundation.access_token != old_access and client.get_project(project["projectId"]) is not None
    assert requests.get(f"{stack.url}/bcf/3.0/projects", headers={"Authorization": f"Bearer {old_access}"}, timeout=30).status_code == 401

    _topic_round_trip(stack, rest, client, project["projectId"], model["id"])
    _web_client_topic_read_by_the_client(stack, rest, client, project["projectId"], model["id"])


def _topic_round_trip(stack: Stack, rest: requests.Session, client: bcfapi.BcfClient, project_id: str, model_id: str) -> None:
    """Topic + comment + viewpoint through the client, read back, updated, seen through the REST API, deleted."""
    topic_guid = str(uuid.uuid4())
    status, text = client.create_topic(project_id, data=json.dumps({
        "guid": topic_guid, "topic_type": "Clash", "topic_status": "Open", "title": "Beam through duct", "priority": "High",
        "labels": ["MEP"], "description": "found in coordination", "assigned_to": USERNAME,
    }))
    assert status == 201, text
    topic = json.loads(text)
    assert topic["guid"] == topic_guid and topic["creation_author"] == USERNAME

    viewpoint_guid = str(uuid.uuid4())
    viewpoint = {
        "guid": viewpoint_guid,
        "perspective_camera": {"camera_view_point": {"x": 10.0, "y": -5.0, "z": 3.0}, "camera_direction": {"x": -1.0, "y": 0.5, "z": -0.2},
                               "camera_up_vector": {"x": 0.0, "y": 0.0, "z": 1.0}, "field_of_view": 60.0, "aspect_ratio": 1.6},
        "components": {"selection": [{"ifc_guid": "1hOSvn6df7F8_7GcBWlR72"}],
                       "visibility": {"default_visibility": True, "exceptions": [{"ifc_guid": "0w6JZ6kLP5XeBPBZp3Ht2u"}]}},
    }
    status, text = client.create_viewpoints(project_id, topic_guid, data=json.dumps(viewpoint))
    assert status == 201, text
    status, text = client.create_comments(project_id, topic_guid, data=json.dumps({"comment": "moving the duct", "viewpoint_guid": viewpoint_guid}))
    assert status == 201, text
    comment_guid = json.loads(text)["guid"]

    read = client.get_topic(project_id, topic_guid)
    assert read is not None and read["title"] == "Beam through duct" and read["labels"] == ["MEP"] and read["priority"] == "High"
    comments = client.get(f"/projects/{project_id}/topics/{topic_guid}/comments")
    assert [(c["guid"], c["comment"], c["viewpoint_guid"]) for c in comments] == [(comment_guid, "moving the duct", viewpoint_guid)]
    assert client.get_comment(project_id, topic_guid, comment_guid)["author"] == USERNAME
    back = client.get_viewpoint(project_id, topic_guid, viewpoint_guid)
    assert back["perspective_camera"] == viewpoint["perspective_camera"]
    assert client.get_selection(project_id, topic_guid, viewpoint_guid) == {"selection": viewpoint["components"]["selection"]}
    visibility = client.get_visibility(project_id, topic_guid, viewpoint_guid)["visibility"]
    assert visibility["default_visibility"] is True and visibility["exceptions"] == viewpoint["components"]["visibility"]["exceptions"]
    listed = client.get(f"/projects/{project_id}/topics", params={"$filter": "priority eq 'High'"})
    assert [t["guid"] for t in listed] == [topic_guid]

    # the same topic is an issue of the project's model in the REST API
    issues = rest.get(f"{stack.url}/api/v1/models/{model_id}/issues", timeout=30).json()["data"]
    (issue,) = [i for i in issues if i["title"] == "Beam through duct"]
    assert issue["priority"] == "High" and issue["labels"] == ["MEP"] and issue["author"] == USERNAME

    status, text = client.update_topic(project_id, topic_guid, data=json.dumps({**{k: read[k] for k in ("topic_type", "title", "labels")},
                                                                              "topic_status": "Resolved", "priority": "Low"}))
    assert status == 200, text
    assert client.get_topic(project_id, topic_guid)["topic_status"] == "Resolved"
    issues = rest.get(f"{stack.url}/api/v1/models/{model_id}/issues", timeout=30).json()["data"]
    assert [(i["status"], i["priority"]) for i in issues if i["title"] == "Beam through duct"] == [("resolved", "Low")]

    status, _ = client.delete_topic(project_id, topic_guid)
    assert status == 200
    assert client.get_topic(project_id, topic_guid) is None
    assert [i for i in rest.get(f"{stack.url}/api/v1/models/{model_id}/issues", timeout=30).json()["data"] if i["title"] == "Beam through duct"] == []


def _web_client_topic_read_by_the_client(stack: Stack, rest: requests.Session, client: bcfapi.BcfClient, project_id: str, model_id: str) -> None:
    """An issue pinned the way the web client pins one (REST, its viewpoint from xeokit's BCFViewpointsPlugin) is a
    topic the client reads with its camera and components as they were made."""
    viewpoint = {
        "perspective_camera": {"camera_view_point": {"x": 4.5, "y": -12.25, "z": 6.0}, "camera_direction": {"x": -0.3, "y": 0.9, "z": -0.3},
                               "camera_up_vector": {"x": 0.0, "y": 0.0, "z": 1.0}, "field_of_view": 45.0, "aspect_ratio": 1.78},
        "components": {"selection": [{"ifc_guid": "1hOSvn6df7F8_7GcBWlR72", "originating_system": "xeokit", "authoring_tool_id": "xeokit"}],
                       "visibility": {"default_visibility": False, "exceptions": [{"ifc_guid": "0w6JZ6kLP5XeBPBZp3Ht2u"}],
                                      "view_setup_hints": {"spaces_visible": False, "space_boundaries_visible": False, "openings_visible": False}},
                       "coloring": [{"color": "FF0000", "components": [{"ifc_guid": "1hOSvn6df7F8_7GcBWlR72"}]}]},
        "clipping_planes": [{"location": {"x": 0.0, "y": 0.0, "z": 2.5}, "direction": {"x": 0.0, "y": 0.0, "z": 1.0}}],
    }
    made = rest.post(f"{stack.url}/api/v1/models/{model_id}/issues", files={"issue": (None, json.dumps({"title": "Pinned in the viewer", "viewpoints": [viewpoint]}))},
                     timeout=60).json()
    assert made["code"] == 0, made
    topic_guid, viewpoint_guid = made["data"]["topicGuid"], made["data"]["viewpoints"][0]["guid"]
    assert topic_guid in [t["guid"] for t in client.get(f"/projects/{project_id}/topics")]
    assert client.get_topic(project_id, topic_guid)["title"] == "Pinned in the viewer"
    (listed,) = client.get_viewpoints(project_id, topic_guid)
    read = client.get_viewpoint(project_id, topic_guid, viewpoint_guid)
    assert listed["guid"] == read["guid"] == viewpoint_guid
    assert read["perspective_camera"] == viewpoint["perspective_camera"] and read["clipping_planes"] == viewpoint["clipping_planes"]
    assert client.get_selection(project_id, topic_guid, viewpoint_guid) == {"selection": viewpoint["components"]["selection"]}
    assert client.get_visibility(project_id, topic_guid, viewpoint_guid) == {"visibility": viewpoint["components"]["visibility"]}
    assert client.get_coloring(project_id, topic_guid, viewpoint_guid) == {"coloring": viewpoint["components"]["coloring"]}
