"""The gateway's answers to hostile input through Django's whole middleware chain: deeply nested JSON, token
guessing, host paths in error texts, the Content-Security-Policy of its pages."""

import json
import sys

import pytest
from django.conf import settings

from chat_app.models import ChatSession
from issues_app.models import Issue
from models_app.models import IfcModel, Project
from core.json_depth import MAX_JSON_DEPTH, json_depth
from viewer_gateway.security_headers import CONTENT_SECURITY_POLICY

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-token"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in (Project, ChatSession, Issue, IfcModel)}


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 900, 100_000])
@pytest.mark.parametrize("method, path, body", [
    ("post", "/api/v1/chat/projects", lambda value: {"title": value, "kind": "ifc"}),
    ("post", "/api/v1/chat/sessions", lambda value: {"title": value}),
    ("patch", "/api/v1/models/{model_id}/issues/{issue_id}", lambda value: {"labels": value}),
    ("put", "/api/v1/models/{model_id}/entities/2O2Fr$t4X7Zf8NOew3FLOH/properties", lambda value: {"Name": value}),
    ("post", "/api/v1/chat/projects", lambda value: value),
])
def test_deeply_nested_json_is_refused_and_changes_nothing(client, method, path, body, depth):
    model = IfcModel.objects.create(name="a.ifc", size=1, status=IfcModel.Status.READY)
    issue = Issue.objects.create(model=model, title="t")
    before = row_counts()
    payload = json.dumps(body("@")).replace('"@"', nested(depth))
    response = getattr(client, method)(path.format(model_id=model.id, issue_id=issue.id), payload, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert response.json() == {"code": 40001, "message": f"the JSON body nests {depth + 1 if '{' in payload[:1] else depth} levels deep; at most {MAX_JSON_DEPTH} levels are accepted", "data": None}
    assert row_counts() == before
    assert Issue.objects.get(pk=issue.pk).labels == issue.labels


def test_json_depth_ignores_brackets_inside_strings():
    assert json_depth(b'{"a": "[[[[\\"[[{{", "b": [1, {"c": []}]}') == 4
    assert json_depth(b'"x"') == 0


def test_a_body_as_deep_as_the_limit_is_accepted(client):
    payload = json.dumps({"title": "@", "kind": "ifc"}).replace('"@"', nested(MAX_JSON_DEPTH - 1))
    response = client.post("/api/v1/chat/projects", payload, content_type="application/json")
    assert response.json()["code"] == 40001 and "levels" not in response.json()["message"]  # the serializer's own complaint


def test_failed_token_attempts_are_throttled_per_address(client, viewer_config):
    viewer_config(apiToken=TOKEN, tokenFailureLimit=3, tokenFailureWindowSeconds=600)
    for _ in range(3):
        assert client.get("/api/v1/models", HTTP_AUTHORIZATION="Bearer guess", REMOTE_ADDR="10.0.0.7").status_code == 401
    refused = client.get("/api/v1/models", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", REMOTE_ADDR="10.0.0.7")
    assert refused.status_code == 429 and refused.json()["code"] == 42900
    assert 0 < int(refused["Retry-After"]) <= 600 and "failed token attempts" in refused.json()["message"]
    assert client.get("/api/v1/models", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", REMOTE_ADDR="10.0.0.8").json()["code"] == 0
    assert client.get("/api/v1/models", HTTP_AUTHORIZATION="Bearer guess", REMOTE_ADDR="10.0.0.8").status_code == 401
    assert client.get("/", REMOTE_ADDR="10.0.0.7").status_code == 200  # the page needs no token, so it is not throttled


def test_right_tokens_do_not_count(client, viewer_config):
    viewer_config(apiToken=TOKEN, tokenFailureLimit=2)
    for _ in range(5):
        assert client.get("/api/v1/models", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").json()["code"] == 0


def test_no_host_path_in_a_stored_error_or_an_error_message(api):
    venv_file = f"{sys.prefix}/lib/python3.11/site-packages/ifcopenshell/file.py"
    data_file = f"{settings.DATA_DIR}/models/m_1/model.ifc"
    model = IfcModel.objects.create(name="a.ifc", size=1, status=IfcModel.Status.FAILED,
                                    error=f"RuntimeError: Unable to open {data_file} (in {venv_file}, line 3) from {settings.BASE_DIR}/converter")
    listed = api.get("/api/v1/models").content.decode()
    one = api.get(f"/api/v1/models/{model.id}").json()["data"]["error"]
    for text in (listed, one):
        for host_path in (str(settings.DATA_DIR), sys.prefix, str(settings.BASE_DIR)):
            assert host_path not in text
    assert one == "RuntimeError: Unable to open <data>/models/m_1/model.ifc (in <venv>/lib/python3.11/site-packages/ifcopenshell/file.py, line 3) from <install>/converter"


def test_the_html_pages_send_a_strict_content_security_policy(client):
    for path in ("/", "/api/v1/docs"):
        response = client.get(path)
        assert response.status_code == 200
        policy = dict(part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";"))
        assert policy["script-src"] == "'self'" and policy["object-src"] == "'none'" and policy["base-uri"] == "'none'"
        assert policy["frame-ancestors"] == "'none'" and policy["default-src"] == "'self'"
        assert response["X-Content-Type-Options"] == "nosniff" and response["Referrer-Policy"] == "same-origin"
        assert b"<script>" not in response.content  # every script is a file the policy allows
    assert client.get("/api/v1/docs?script").status_code == 200
    assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
