"""Trust at the edge, on a real gateway process: what a client can do with headers alone (root paths, forwarded
prefixes, proxy headers), bodies sent without the token, and requests from pages of other sites."""

from __future__ import annotations

import http.client
import json
import socket
import time

import pytest
import requests

from serving.http_server import LINGER_MAX_BYTES
from tests.e2e.stack import Stack
from tests.e2e.test_gateway_hardening_e2e import raw_request
from tests.gateway.test_auth_cors import METHODS, gateway_routes, is_anonymous
from tests.helpers import MINIMAL_IFC

pytestmark = pytest.mark.e2e

TOKEN = "edge-token"
# Each of these once made Django route on a shorter path than the exemption check looked at (Daphne, which served
# the gateway before, took root_path from Daphne-Root-Path), or is a header some servers turn into a script name or client address.
HEADER_VARIANTS = [
    {"Daphne-Root-Path": "/admin"},
    {"Daphne-Root-Path": "/static"},
    {"Daphne-Root-Path": "/admin/"},
    {"X-Script-Name": "/admin"},
    {"X-Forwarded-Prefix": "/admin"},
    {"X-Forwarded-Prefix": "/static", "X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": "https"},
]
PREFIXES = ["", "/admin", "/static"]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """A gateway alone (no workers, no edit service) with apiToken set, on the real server. It sends thousands of
    wrong tokens on purpose: the guessing throttle (tested in test_gateway_low_findings_e2e) is set out of reach."""
    running = Stack(tmp_path_factory.mktemp("edge"), token=TOKEN, workers=0, config={"tokenFailureLimit": 10**9})
    running.session.headers.pop("Authorization")  # this test speaks as a client without the token
    running.migrate()
    running.start_gateway()
    yield running
    running.stop()


def is_api_success(body: bytes) -> bool:
    try:
        answer = json.loads(body)
    except ValueError:
        return False
    return isinstance(answer, dict) and answer.get("code") == 0


class KeptAliveClient:
    """One kept-alive connection (http.client) for the ~18,000 requests of the route matrix: `requests` spent ~14 s
    of processor time on them, most of the test's."""

    def __init__(self, port: int):
        self.port = port
        self.connection: http.client.HTTPConnection | None = None

    def request(self, method: str, target: str, headers: dict[str, str]) -> tuple[int, bytes]:
        try:
            return self._send(method, target, headers)
        except (http.client.RemoteDisconnected, ConnectionError):  # the server closed the kept-alive connection
            self.close()
            return self._send(method, target, headers)

    def _send(self, method: str, target: str, headers: dict[str, str]) -> tuple[int, bytes]:
        if self.connection is None:
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        self.connection.request(method, target, headers=headers)
        response = self.connection.getresponse()
        body = response.read()
        if response.will_close:
            self.close()
        return response.status, body

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def test_no_header_or_prefix_opens_a_route_without_the_token(gateway):
    opened, unrefused = [], []
    client = KeptAliveClient(gateway.port)
    try:
        for path in sorted(set(gateway_routes())):
            for prefix in PREFIXES:
                target = requests.Request("GET", gateway.url + prefix + path).prepare().path_url  # as requests would send it
                for method in METHODS:
                    for headers in HEADER_VARIANTS:
                        status, body = client.request(method.upper(), target, headers)
                        if is_api_success(body):
                            opened.append((method, prefix + path, headers, status))
                        if not prefix and not is_anonymous(method, path) and status != 401:
                            unrefused.append((method, path, headers, status))
    finally:
        client.close()
    assert opened == [], opened[:10]
    assert unrefused == [], unrefused[:10]


def test_a_body_without_the_token_is_refused_from_the_headers_alone(gateway):
    """The answer comes before any body byte is sent; what the client sends after it is dropped, never buffered,
    and the connection is cut once the lingering close's allowance is used up."""
    head = "POST /api/v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 157286400\r\n\r\n"
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        sock.sendall(head.encode())
        answer = sock.recv(65536)  # on a server that reads the body first, this waits for 150 MB that never come
        assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
        assert b'"code": 40100' in answer
        sent, chunk, most = 0, b"x" * (1024 * 1024), 100 * 1024 * 1024
        with pytest.raises(OSError):  # broken pipe / reset: the server cut the connection
            while sent < most:
                sock.sendall(chunk)
                sent += len(chunk)
                time.sleep(0.01)
    assert sent < LINGER_MAX_BYTES + 8 * 1024 * 1024  # the allowance plus what socket buffers hold


def test_with_the_token_the_route_limits_apply_as_before(gateway):
    status, body = raw_request(gateway, f"POST /api/v1/models HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer {TOKEN}\nContent-Type: multipart/form-data; boundary=b\nContent-Length: 50000000000\n")
    assert (status, body["code"]) == (400, 40002)
    ids_upload = f"PUT /api/v1/projects/p_0123456789abcdef/ids/fire.ids HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer {TOKEN}\nContent-Type: application/xml\nContent-Length: 6000000\n"
    assert raw_request(gateway, ids_upload)[1]["code"] == 40002
    status, body = raw_request(gateway, "POST /api/v1/models HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer wrong\nContent-Type: multipart/form-data; boundary=b\nContent-Length: 50000000000\n")
    assert (status, body["code"]) == (401, 40100)


@pytest.mark.parametrize("body", [b"", b"--b--", b"garbage without parts", b"--b\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nno end"])
def test_a_malformed_multipart_body_gets_the_envelope(gateway, body):
    response = requests.post(f"{gateway.url}/api/v1/models", data=body, timeout=30,
                             headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "multipart/form-data; boundary=b"})
    assert response.status_code == 400 and response.json()["code"] == 40001, response.content


def test_a_cross_site_upload_is_refused_before_its_body(gateway):
    head = (f"POST /api/v1/models HTTP/1.1\nHost: 127.0.0.1:{gateway.port}\nAuthorization: Bearer {TOKEN}\nOrigin: http://evil.example\n"
            "Content-Type: multipart/form-data; boundary=b\nContent-Length: 157286400\n")
    status, body = raw_request(gateway, head)
    assert (status, body["code"]) == (403, 40300) and "evil.example" in body["message"]
    own = requests.post(f"{gateway.url}/api/v1/models", files={"file": ("a.ifc", MINIMAL_IFC)}, timeout=30,
                        headers={"Authorization": f"Bearer {TOKEN}", "Origin": gateway.url})
    assert own.json()["code"] == 0
    listed = requests.get(f"{gateway.url}/api/v1/models", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).json()["data"]
    assert [m["id"] for m in listed] == [own.json()["data"]["id"]]  # the refused upload left nothing
    assert list((gateway.data_dir / "tmp").iterdir()) == []


def test_forwarded_for_from_an_untrusted_peer_does_not_dodge_the_admin_lockout(gateway):
    """Admin logins are throttled per user name and client address; the address is the TCP peer, since no proxy is
    trusted, so inventing X-Forwarded-For values does not reset the count."""
    with requests.Session() as browser:
        login = f"{gateway.url}/admin/login/"
        for attempt in range(6):
            browser.get(login, timeout=30)
            answer = browser.post(login, data={"username": "operator", "password": f"wrong{attempt}", "csrfmiddlewaretoken": browser.cookies["csrftoken"]},
                                  headers={"Referer": login, "X-Forwarded-For": f"203.0.113.{attempt}"}, timeout=30, allow_redirects=False)
        assert answer.status_code == 429, answer.status_code
