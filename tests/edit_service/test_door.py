"""Who gets through the edit service's door (edit_service/door.py): the service secret on every route but /health and
the docs, loopback or not, whatever the Host header says; no browser-made request; bodies only in the route's format;
no 500 on deeply nested JSON; no host install path in an error text."""

import ipaddress
import secrets
import stat
import traceback

import psutil
import pytest
import requests

from core.host_paths import host_prefixes, neutral_paths
from core.service_secret import HEADER as SECRET_HEADER
from core.service_secret import ensure_secret, read_secret, secret_path
from edit_service import door
from tests.edit_service.conftest import example
from tests.edit_service.test_api import EditService

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    running = EditService(tmp_path_factory.mktemp("door")).start()
    yield running
    running.stop()


def _staged(service, model) -> dict:
    return service.call("GET", f"{model}/script").json()


# --- the secret -------------------------------------------------------------------------------------------------

def test_the_secret_is_made_on_first_start_readable_by_its_owner_only(service):
    path = secret_path(service.data_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(read_secret(service.data_dir)) >= 40
    assert ensure_secret(service.data_dir) == read_secret(service.data_dir)  # a second process finds the first's


def test_a_loopback_caller_without_the_secret_is_refused(service, model):
    service.call("PUT", f"{model}/script", json={"script": example("small_house")})
    for method, path, body in [("GET", "/script", None), ("GET", "/versions", None), ("PUT", "/script", {"script": "x = 1"}),
                               ("POST", "/script/undo", None), ("GET", "/versions/v1/ifc", None)]:
        response = service.call(method, f"{model}{path}", json=body, secret=False)
        assert response.status_code == 401 and SECRET_HEADER in response.json()["detail"], (method, path)
    assert _staged(service, model)["script"] == example("small_house")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", None])
def test_a_wrong_secret_is_refused_whatever_the_host_header(service, model, host):
    wrong = "x" * len(read_secret(service.data_dir))
    headers = {SECRET_HEADER: wrong, **({"Host": host} if host else {})}
    response = service.call("PUT", f"{model}/script", json={"script": "x = 1"}, headers=headers, secret=False)
    assert response.status_code == 401
    assert wrong not in response.text and read_secret(service.data_dir) not in response.text
    assert _staged(service, model).get("script") is None


def test_with_the_secret_the_caller_is_served(service, model):
    assert service.call("PUT", f"{model}/script", json={"script": example("small_house")}).status_code == 200
    assert _staged(service, model)["script"] == example("small_house")


def test_health_and_the_docs_need_no_secret(service):
    assert service.call("GET", "/health", secret=False).json() == {"status": "ok"}
    assert service.call("GET", "/openapi.json", secret=False).json()["components"]["securitySchemes"]["serviceSecret"]["name"] == SECRET_HEADER
    # opened in a browser tab: a navigation, as Chromium sends it
    tab = {"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Sec-Fetch-User": "?1"}
    docs = service.call("GET", "/docs", headers=tab, secret=False)
    assert docs.status_code == 200 and "swagger" in docs.text.lower()


def test_a_secret_that_cannot_be_read_shuts_the_door(service, model):
    path = secret_path(service.data_dir)
    kept = path.read_text()
    path.unlink()
    try:
        for headers in ({SECRET_HEADER: kept.strip()}, {SECRET_HEADER: ""}, {}):
            response = service.call("GET", f"{model}/versions", headers=headers, secret=False)
            assert response.status_code == 503 and "secret" in response.json()["detail"] and str(service.data_dir) not in response.text
    finally:
        path.write_text(kept)
        path.chmod(0o600)
    assert service.call("GET", f"{model}/versions").status_code == 200


def _non_loopback_address() -> str | None:
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            try:
                ip = ipaddress.ip_address(address.address)
            except ValueError:
                continue
            if ip.version == 4 and not ip.is_loopback and not ip.is_link_local:
                return address.address
    return None


def test_bound_beyond_loopback_the_secret_is_still_required(tmp_path):
    address = _non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    exposed = EditService(tmp_path, host=address).start()
    try:
        model_id = "m_" + secrets.token_hex(8)
        (tmp_path / "models" / model_id).mkdir(parents=True)
        for host in (None, "127.0.0.1", f"127.0.0.1:{exposed.url.rsplit(':', 1)[1]}", "localhost"):
            response = exposed.call("GET", f"/models/{model_id}/versions", headers={"Host": host} if host else {}, secret=False)
            assert response.status_code == 401, host
        assert exposed.call("GET", f"/models/{model_id}/versions").status_code == 200
    finally:
        exposed.stop()


# --- browsers ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
    {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"},
    {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"},
    {"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate"},
])
def test_a_browser_made_request_is_refused_even_with_the_secret(service, model, headers):
    response = service.call("PUT", f"{model}/script", json={"script": "x = 1"}, headers=headers)
    assert response.status_code == 403 and "browser" in response.json()["detail"]
    assert _staged(service, model).get("script") is None


# --- bodies -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    {"files": {"script": (None, "PARAMS = {}\n")}},
    {"data": {"script": "PARAMS = {}\n"}},
    {"data": '{"script": "PARAMS = {}\\n"}', "headers": {"Content-Type": "text/plain"}},
    {"data": b'{"script": "PARAMS = {}\\n"}'},
])
def test_form_and_other_non_json_bodies_are_refused_on_json_routes(service, model, body):
    response = service.call("PUT", f"{model}/script", **body)
    assert response.status_code == 415 and "application/json" in response.json()["detail"]
    assert _staged(service, model).get("script") is None


def test_a_bodyless_route_refuses_a_form_body(service, model):
    service.call("PUT", f"{model}/script", json={"script": example("small_house")})
    response = service.call("POST", f"{model}/script/run", files={"x": (None, "1")})
    assert response.status_code == 415
    assert not (service.data_dir / model.lstrip("/") / "model.ifc").exists()  # nothing ran


def test_the_upload_route_takes_multipart_only(service, model):
    response = service.call("POST", f"{model}/diff/upload", json={"file": "ISO-10303-21;"})
    assert response.status_code == 415 and "multipart/form-data" in response.json()["detail"]


@pytest.mark.parametrize("document", [
    "[" * 100_000 + "]" * 100_000,  # deeper than the interpreter's recursion limit
    '{"script": "x", "note": ' + "[" * 500 + "]" * 500 + "}",  # parses, but deeper than any request needs
    '{"events": ' + '{"a":' * 3000 + "1" + "}" * 3000 + "}",
])
def test_deeply_nested_json_is_a_clear_422(service, model, document):
    response = service.call("PUT", f"{model}/script", data=document, headers={"Content-Type": "application/json"})
    assert response.status_code == 422 and "nests deeper" in str(response.json()["detail"])
    response = service.call("POST", f"{model}/user-edits", data=document, headers={"Content-Type": "application/json"})
    assert response.status_code == 422


# --- error texts ------------------------------------------------------------------------------------------------

def test_a_failed_run_names_no_host_install_path(service, model):
    # fails inside ifcopenshell: the traceback goes through the virtualenv's site-packages
    script = "PARAMS = {}\n\ndef build(params, out_path):\n    import ifcopenshell\n    ifcopenshell.file(schema='NO_SUCH_SCHEMA')\n"
    service.call("PUT", f"{model}/script", json={"script": script})
    response = service.call("POST", f"{model}/script/run")
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert "Traceback" in detail and "ifcopenshell" in detail
    for path in host_prefixes(service.data_dir):
        assert path not in detail, path


def test_neutral_paths_replace_every_install_path_of_a_real_traceback(tmp_path):
    try:
        requests.get("http://[not an address")
    except requests.RequestException:
        text = traceback.format_exc() + f"\nwhile reading {tmp_path}/models/m_1/model.ifc"
    cleaned = neutral_paths(text, host_prefixes(tmp_path))
    assert "<venv>" in cleaned and "<data>/models/m_1/model.ifc" in cleaned
    for path in host_prefixes(tmp_path):
        assert path not in cleaned, path


# --- the decision itself (the server's header check and the middleware both call it) ---------------------------

def test_the_decision_ignores_peer_and_host_and_fails_closed(tmp_path):
    secret = ensure_secret(tmp_path)
    route = "/models/m_0000000000000001/script/rollback"
    with_secret = {SECRET_HEADER.lower(): secret, "host": "127.0.0.1", "content-type": "application/json", "content-length": "17"}
    assert door.refusal("POST", route, with_secret, tmp_path) is None
    assert door.refusal("POST", route, {**with_secret, SECRET_HEADER.lower(): secret + "x"}, tmp_path).status == 401
    assert door.refusal("POST", route, {**with_secret, "content-type": "multipart/form-data; boundary=x"}, tmp_path).status == 415
    assert door.refusal("POST", route, {**with_secret, "sec-fetch-mode": "no-cors"}, tmp_path).status == 403
    assert door.refusal("GET", "/docs", {"sec-fetch-site": "none", "sec-fetch-mode": "navigate"}, tmp_path) is None
    assert door.refusal("POST", "/health", {}, tmp_path).status == 401
    secret_path(tmp_path).unlink()
    assert door.refusal("POST", route, with_secret, tmp_path).status == 503
