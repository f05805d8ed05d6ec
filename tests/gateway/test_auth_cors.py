import re

import pytest
from django.urls import resolve

from accounts_app.roles import Capability
from viewer_gateway.access_rules import route_capability
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import URLPattern, URLResolver, get_resolver

from models_app.models import IfcModel
from tests.helpers import MINIMAL_IFC
from viewer_gateway.config import ConfigError, load_config
from viewer_gateway.edge import trusted_scope

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-token"
SAMPLE_VALUES = {"item_id": "m_0123456789abcdef", "model_id": "m_0123456789abcdef", "issue_id": "i_0123456789ab", "entity_id": "2O2Fr$t4X7Zf8NOew3FLOH", "file_name": "i_0123456789ab.png",
                 "project_id": "p_0123456789abcdef", "cid": "c_0123456789abcdef", "name": "plan", "base": "v1", "target": "v2",
                 "check_id": "chk_0123456789abcdef", "comment_id": "5d7e1f8a-0000-4000-8000-00000000000a",
                 "version": "v1"}
METHODS = ["get", "post", "put", "patch", "delete", "options"]
# spec, Authentication rule 2, plus the Swagger UI page (an HTML shell; the schema it loads needs the token)
ANONYMOUS = {
    ("get", "/v1/models/m_0123456789abcdef/model.xkt"),
    ("get", "/v1/models/m_0123456789abcdef/metadata.json"),
    ("get", "/v1/models/m_0123456789abcdef/versions/v1/model.xkt"),
    ("get", "/v1/models/m_0123456789abcdef/versions/v1/metadata.json"),
    ("get", "/v1/models/m_0123456789abcdef/issues/i_0123456789ab.png"),
    ("get", "/api/v1/docs"),
    ("get", "/"),
}


def is_anonymous(method: str, path: str) -> bool:
    """The spec's anonymous GETs, and the routes whose access rule is public (the sign-in pages, token creation with
    a password); a non-preflight OPTIONS needs the token everywhere."""
    if (method, path) in ANONYMOUS:
        return True
    return method != "options" and route_capability(resolve(path).url_name, method.upper()) == Capability.PUBLIC


def gateway_routes(patterns=None, prefix=""):
    """Every concrete path of the URL conf, with sample values for its parameters."""
    for entry in patterns if patterns is not None else get_resolver().url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if route.startswith("admin/"):
                continue  # Django's own staff login
            yield from gateway_routes(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            yield "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: SAMPLE_VALUES.get(m.group(1), "x1"), route)


def test_url_conf_is_enumerated():
    routes = set(gateway_routes())
    assert {"/api/v1/models", "/api/v1/models/m_0123456789abcdef", "/v1/models/m_0123456789abcdef/model.xkt"} <= routes


@pytest.mark.parametrize("path", sorted(set(gateway_routes())))
def test_every_non_exempt_route_needs_the_token(client, viewer_config, path):
    viewer_config(apiToken=TOKEN)
    for method in METHODS:
        if is_anonymous(method, path):
            continue
        for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer wrong"}, {"HTTP_AUTHORIZATION": f"Basic {TOKEN}"}, {"HTTP_AUTHORIZATION": TOKEN}):
            response = getattr(client, method)(path, **headers)
            assert response.status_code == 401, (method, path, headers)
            assert response.json() == {"code": 40100, "message": "missing or invalid bearer token", "data": None}


def test_docs_page_is_anonymous_but_the_schema_is_not(client, viewer_config):
    viewer_config(apiToken=TOKEN)
    page = client.get("/api/v1/docs")
    assert page.status_code == 200 and b'src="/api/v1/docs?script="' in page.content  # no inline script (the CSP)
    script = client.get("/api/v1/docs", {"script": ""})
    assert script.status_code == 200 and b"viewerApiToken" in script.content  # asks for the token, sends it
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
    ["/v1/models/m_0123456789abcdef/model.xkt", "/v1/models/m_0123456789abcdef/metadata.json", "/v1/models/m_0123456789abcdef/issues/i_0123456789ab.png",
     "/v1/models/m_0123456789abcdef/versions/v1/model.xkt", "/v1/models/m_0123456789abcdef/versions/v1/metadata.json"],
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


# --- the path Django routes on decides, never a root path or prefix a client supplies (issue: Daphne-Root-Path) ---


@pytest.mark.parametrize("path", sorted(set(gateway_routes())))
def test_a_client_supplied_root_path_opens_no_route(client, viewer_config, path):
    """Django builds request.path from the script name (under Daphne, which served the gateway before: the Daphne-Root-Path header) plus path_info,
    and routes on path_info; exemptions decided on request.path were opened by a root path of /admin or /static."""
    viewer_config(apiToken=TOKEN)
    for method in METHODS:
        if is_anonymous(method, path):
            continue
        for script_name in ("/admin", "/static", "/admin/", "/api/v1/docs"):
            response = client.generic(method.upper(), path, SCRIPT_NAME=script_name)
            assert response.status_code == 401, (method, path, script_name, response.content[:200])


def test_trusted_scope_ignores_root_path_and_forwarded_headers_from_anyone(settings):
    scope = {"type": "http", "path": "/api/v1/models", "root_path": "/admin", "scheme": "http", "client": ["10.1.2.3", 5555],
             "headers": [(b"x-forwarded-for", b"1.2.3.4"), (b"x-forwarded-proto", b"https"), (b"x-forwarded-prefix", b"/admin")]}
    trusted = trusted_scope(scope)
    assert (trusted["root_path"], trusted["path"], trusted["scheme"], trusted["client"]) == ("", "/api/v1/models", "http", ["10.1.2.3", 5555])


def test_trusted_scope_takes_forwarded_headers_from_a_named_proxy(viewer_config):
    viewer_config(trustedProxies=("10.0.0.0/8",))
    scope = {"type": "http", "path": "/api/v1/models", "root_path": "/static", "scheme": "http", "client": ["10.1.2.3", 5555],
             "headers": [(b"x-forwarded-for", b"6.6.6.6, 1.2.3.4, 10.9.9.9"), (b"x-forwarded-proto", b"https"), (b"x-forwarded-prefix", b"/viewer/")]}
    trusted = trusted_scope(scope)
    # Routing stays on the path as received; the prefix only becomes the script name that URLs are built with.
    assert (trusted["root_path"], trusted["path"], trusted["scheme"]) == ("/viewer", "/viewer/api/v1/models", "https")
    assert trusted["client"] == ["1.2.3.4", 0]  # the rightmost hop the trusted proxies did not add
    odd = trusted_scope({**scope, "headers": [(b"x-forwarded-prefix", b"/a/../admin"), (b"x-forwarded-proto", b"gopher")]})
    assert (odd["root_path"], odd["scheme"]) == ("", "http")


def test_trusted_proxies_must_be_addresses(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"trustedProxies": ["10.0.0.1", "proxy.example"]}')
    with pytest.raises(ConfigError, match="trustedProxies: 'proxy.example'"):
        load_config({"VIEWER_CONFIG": str(path)})


# --- cross-site requests (no token is the default, so a page of any site could drive the API) ---

UPLOAD = {"file": SimpleUploadedFile("a.ifc", MINIMAL_IFC)}


@pytest.mark.parametrize("origin_headers", [
    {"HTTP_ORIGIN": "http://evil.example"},
    {"HTTP_ORIGIN": "null"},
    {"HTTP_ORIGIN": "http://testserver.evil.example"},
    {"HTTP_REFERER": "http://evil.example/page.html"},
    {"HTTP_ORIGIN": "https://testserver"},  # another scheme is another site
])
def test_a_cross_site_state_change_is_refused_and_changes_nothing(client, origin_headers):
    response = client.post("/api/v1/models", {"file": SimpleUploadedFile("a.ifc", MINIMAL_IFC)}, **origin_headers)
    assert response.status_code == 403, response.content
    body = response.json()
    assert body["code"] == 40300 and "cross-site request refused" in body["message"] and body["data"] is None
    assert not IfcModel.objects.exists()
    for method in ("put", "patch", "delete"):
        assert getattr(client, method)("/api/v1/models/m_0123456789abcdef", **origin_headers).status_code == 403


@pytest.mark.parametrize("origin_headers", [
    {},  # curl, scripts, the agent: no Origin and no Referer
    {"HTTP_ORIGIN": "http://testserver"},  # the gateway's own web client
    {"HTTP_REFERER": "http://testserver/"},
    {"HTTP_ORIGIN": "http://localhost:5173"},  # corsOrigins
])
def test_same_site_and_whitelisted_state_changes_pass(client, origin_headers):
    response = client.post("/api/v1/models", {"file": SimpleUploadedFile("a.ifc", MINIMAL_IFC)}, **origin_headers)
    assert response.status_code == 200, response.content
    assert IfcModel.objects.count() == 1


def test_cross_site_reads_are_not_refused(client):
    """Reading needs CORS to expose the answer to a foreign page; refusing safe methods would only break links."""
    assert client.get("/api/v1/models", HTTP_ORIGIN="http://evil.example").status_code == 200
