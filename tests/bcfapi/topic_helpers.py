"""What the BCF API topic tests share: a project with an IFC model and its people (each with a personal token, as a
BCF client sends one), request helpers that validate every answer against the official JSON schemas."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import pytest
from django.test import Client

from accounts_app.models import ProjectMember
from models_app.models import IfcModel, Project
from models_app.storage import model_dir
from tests.accounts.people import bearer, person, project_with_models, token_of
from tests.bcfapi.schema_check import BCF, validate
from tests.issues.conftest import png_bytes

BASE = "/bcf/3.0/projects"


@dataclass
class Team:
    """Project Tower with one IFC model; olga owns it, rita reviews, vera views."""

    project: Project
    model: IfcModel
    clients: dict[str, Client]

    @property
    def base(self) -> str:
        return f"{BASE}/{self.project.id}"


def make_team(usernames=(("olga", "owner"), ("rita", "reviewer"), ("vera", "viewer"))) -> Team:
    project, models = project_with_models("Tower", models=1)
    model_dir(models[0].id).mkdir(parents=True)
    clients = {}
    for username, role in usernames:
        ProjectMember.objects.create(project=project, user=person(username), role=role)
        clients[username] = bearer(token_of(username)["token"])
    return Team(project, models[0], clients)


@pytest.fixture
def team(db) -> Team:
    return make_team()


def send(client: Client, method: str, path: str, body=None, schema: str | None = None, status: int = 200, headers: dict | None = None):
    """A JSON request; asserts the status and validates the answer against `schema` (a path under the official
    Schemas folder, e.g. Collaboration/Topic/topic_GET.json; "[]" suffix: a list of it) or, for 4xx, error.json
    (tests/bcfapi/conftest.py checks every answer against its route's row as well)."""
    kwargs = {"content_type": "application/json", "headers": headers or {}}
    if body is not None:
        kwargs["data"] = json.dumps(body)
    response = getattr(client, method.lower())(path, **kwargs)
    assert response.status_code == status, (response.status_code, response.content[:2000])
    if status >= 400:
        validate(response.json(), BCF + "error.json", strict=False)
    elif schema is not None:
        validate(response.json(), BCF + schema.removesuffix("[]"), is_many=schema.endswith("[]"))
    return response


def answer(client: Client, method: str, path: str, body=None, schema: str | None = None, status: int = 200, headers: dict | None = None):
    """send() and the answer's JSON (None for an empty body)."""
    response = send(client, method, path, body, schema, status, headers)
    return response.json() if response.content else None


def png_b64(width: int = 2) -> str:
    return base64.b64encode(png_bytes(width)).decode()


def xeokit_viewpoint() -> dict:
    """A viewpoint as xeokit's BCFViewpointsPlugin getViewpoint() writes it (perspective camera, selection, visibility
    with exceptions and view setup hints, coloring, clipping planes, a snapshot as a data: URL)."""
    return {
        "perspective_camera": {
            "camera_view_point": {"x": 12.5, "y": -8.25, "z": 6.0}, "camera_direction": {"x": -0.5, "y": 0.5, "z": -0.7071067811865476},
            "camera_up_vector": {"x": 0.0, "y": 0.0, "z": 1.0}, "field_of_view": 60.0, "aspect_ratio": 1.5,
        },
        "lines": [],
        "clipping_planes": [{"location": {"x": 1.0, "y": 2.0, "z": 3.0}, "direction": {"x": 0.0, "y": 0.0, "z": -1.0}}],
        "bitmaps": [],
        "snapshot": {"snapshot_type": "png", "snapshot_data": "data:image/png;base64," + png_b64()},
        "components": {
            "visibility": {"default_visibility": True, "exceptions": [{"ifc_guid": "2O2Fr$t4X7Zf8NOew3FLOH", "originating_system": "xeokit.io", "authoring_tool_id": "xeokit"}],
                           "view_setup_hints": {"spaces_visible": False, "space_boundaries_visible": False, "openings_visible": False}},
            "selection": [{"ifc_guid": "3cUkl32yn9qRSPvBJVyWYp", "originating_system": "xeokit.io", "authoring_tool_id": "xeokit"}],
            "coloring": [{"color": "ff0000", "components": [{"ifc_guid": "3cUkl32yn9qRSPvBJVyWYp"}]}],
        },
    }
