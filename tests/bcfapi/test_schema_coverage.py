"""The schema table covers every route of the BCF API and the Foundation API, and the checker can fail."""

from __future__ import annotations

from urllib.parse import urljoin

import jsonschema
import pytest
from django.urls import URLPattern, URLResolver

from bcfapi_app import urls as bcf_urls
from tests.bcfapi.schema_check import ANSWERS, PROJECT, SCHEMAS, AnswerMismatch, registry, validate
from viewer_gateway.access_rules import ROUTE_RULES


def _names(patterns):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _names(entry.url_patterns)
        elif isinstance(entry, URLPattern):
            yield entry.name


def test_every_bcf_and_foundation_route_and_method_has_a_schema_row():
    wanted = {(name, method) for name in _names(bcf_urls.urlpatterns) for method in ROUTE_RULES[name]}
    assert sorted(wanted - set(ANSWERS)) == [], "routes without a schema row in tests/bcfapi/schema_check.py"
    assert sorted(set(ANSWERS) - wanted) == [], "schema rows of routes that do not exist"


def _refs(schema):
    if isinstance(schema, dict):
        if isinstance(schema.get("$ref"), str):
            yield schema["$ref"]
        for value in schema.values():
            yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


def test_every_vendored_schema_is_draft_03_and_every_ref_resolves():
    schemas = registry()
    assert len(schemas) == 58
    for uri in schemas:
        contents = schemas.contents(uri)
        jsonschema.Draft3Validator.check_schema(contents)
        for ref in _refs(contents):
            assert schemas.contents(urljoin(uri, ref)) is not None
    for row in ANSWERS.values():
        assert not row.schema or (SCHEMAS / row.schema).is_file(), row.schema


@pytest.mark.parametrize("answer, complaint", [
    ({"project_id": "p_1"}, "name"),
    ({"project_id": "p_1", "name": 5}, "name"),
    ({"project_id": "p_1", "name": "x", "authorization": {"project_actions": ["fly"]}}, "fly"),
    ({"project_id": "p_1", "name": "x", "title": "x"}, "$.title"),
    ({"project_id": "p_1", "name": "x", "authorization": {"project_action": []}}, "$.authorization.project_action"),
])
def test_the_checker_fails_a_wrong_answer(answer, complaint):
    with pytest.raises(AnswerMismatch, match=complaint.replace("$", r"\$")):
        validate(answer, PROJECT)


def test_the_checker_follows_relative_refs_into_action_lists_and_viewpoints():
    validate({"project_id": "p", "name": "n", "authorization": {"project_actions": ["update"]}}, PROJECT)
    viewpoint = "bcf/Collaboration/Viewpoint/viewpoint_GET.json"
    good = {"guid": "g", "perspective_camera": {"camera_view_point": {"x": 0, "y": 0, "z": 0}, "camera_direction": {"x": 1, "y": 0, "z": 0},
                                                "camera_up_vector": {"x": 0, "y": 0, "z": 1}, "field_of_view": 60, "aspect_ratio": 1.5}}
    validate(good, viewpoint)
    with pytest.raises(AnswerMismatch):
        validate({**good, "perspective_camera": {**good["perspective_camera"], "camera_direction": {"x": "1"}}}, viewpoint)
