import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-token"
SAMPLE_VALUES = {"model_id": "m_0123456789abcdef", "issue_id": "i_0123456789ab", "entity_id": "2O2Fr$t4X7Zf8NOew3FLOH", "file_name": "i_0123456789ab.png",
                 "project_id": "p_0123456789abcdef", "cid": "c_0123456789abcdef", "name": "plan", "base": "v1", "target": "v2"}
METHODS = ["get", "post", "put", "patch", "delete", "options"]
# spec, Authentication rule 2, plus the Swagger UI page (an HTML shell; the schema it loads needs the token)
ANONYMOUS = {
    ("get", "/v1/models/m_0123456789abcdef/model.xkt"),
    ("get", "/v1/models/m_0123456789abcdef/metadata.json"),
    ("get", "/v1/models/m_0123456789abcdef/issues/i_0123456789ab.png"),
    ("get", "/api/v1/docs"),
    ("get", "/"),
}


def gateway_routes(patterns=None, prefix=""):
    """Every concrete path of the URL conf, with sample values for its parameters."""
    for entry in patterns if patterns is not None else get_resolver().url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if route.startswith("admin/"):
                continue  # Django's own staff login
            yield from gateway_routes(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            yield "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: SAMPLE_VALUES[m.group(1)], route)


def test_url_conf_is_enumerated():
    routes = set(gateway_routes())
    assert {"/api/v1/models", "/api/v1/models/m_0123456789abcdef", "/v1/models/m_0123456789abcdef/model.xkt"} <= routes


@pytest.mark.parametrize("path", sorted(set(gateway_routes())))
def test_every_non_exempt_route_needs_the_token(client, viewer_config, path):
    viewer_config(apiToken=TOKEN)
    for method in METHODS:
        if (method, path) in ANONYMOUS:
            continue
        for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer wrong"}, {"HTTP_AUTHORIZATION": f"Basic {TOKEN}"}, {"HTTP_AUTHORIZATION": TOKEN}):
            response = getattr(client, method)(path, **headers)
            assert response.status_code == 401, (method, path, headers)
            assert response.json() == {"code": 40100, "message": "missing or invalid bearer token", "data": None}


def test_docs_page_is_anonymous_but_the_schema_is_not(client, viewer_config):
    viewer_config(apiToken=TOKEN)
    page = client.get("/api/v1/docs")
    assert page.status_code == 200 and b"viewerApiToken" in page.content  # asks for the token, sends it
    assert client.get("/api/v1/openapi.json").status_code == 401
    assert client.get("/api/v1/openapi.json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


def test_only_a_real_preflight_is_anonymous(client, viewer_config):
    viewer_config(apiToken=TOKEN)
    assert client.options("/api/v1/models").status_code == 401
    assert client.options("/api/v1/models", HTTP_ORIGIN="http://localhost:5173").status_code == 401
    preflight = client.options("/api/v1/models", HTTP_ORIGIN="http://localhost:5173", HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET")
    assert preflight.status_code == 200


def test_the_right_token_passes(client, viewer_config):
    viewer_config(apiToken=TOKEN)
    response = client.get("/api/v1/models", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200 and response.json()["code"] == 0


@pytest.mark.parametrize(
    "path",
    ["/v1/models/m_0123456789abcdef/model.xkt", "/v1/models/m_0123456789abcdef/metadata.json", "/v1/models/m_0123456789abcdef/issues/i_0123456789ab.png"],
)
def test_static_gets_are_anonymous(client, viewer_config, path):
    viewer_config(apiToken=TOKEN)
    assert client.get(path).status_code == 404  # reaches the view: unknown model, not 401


def test_no_token_configured_means_open(client):
    assert client.get("/api/v1/models").status_code == 200


def test_preflight_from_allowed_origin(client, viewer_config):
    viewer_config(apiToken=TOKEN)
    response = client.options(
        "/api/v1/models",
        HTTP_ORIGIN="http://localhost:5173",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, last-event-id, content-type",
    )
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "http://localhost:5173"
    allowed = {h.strip().lower() for h in response["Access-Control-Allow-Headers"].split(",")}
    assert {"authorization", "last-event-id"} <= allowed


def test_preflight_from_foreign_origin_is_not_reflected(client):
    response = client.options(
        "/api/v1/models", HTTP_ORIGIN="https://evil.example", HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET"
    )
    assert "Access-Control-Allow-Origin" not in response


def test_simple_request_origin_reflection(client):
    allowed = client.get("/api/v1/models", HTTP_ORIGIN="http://localhost:8080")
    foreign = client.get("/api/v1/models", HTTP_ORIGIN="http://localhost:9999")
    assert allowed["Access-Control-Allow-Origin"] == "http://localhost:8080"
    assert "Access-Control-Allow-Origin" not in foreign


def test_unauthorized_answer_still_carries_cors_headers(client, viewer_config):
    viewer_config(apiToken=TOKEN)
    response = client.get("/api/v1/models", HTTP_ORIGIN="http://localhost:5173")
    assert response.status_code == 401
    assert response["Access-Control-Allow-Origin"] == "http://localhost:5173"
