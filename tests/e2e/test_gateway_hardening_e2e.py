"""The gateway as an attacker and a careless client meet it, on the real processes (gateway, workers, edit service)."""

import json
import socket
import time

import pytest
import requests

from core.limits import MEGABYTE, SCRIPT_BODY_BYTES
from edit_service.sandbox.script_lib import guid_for
from serving.http_server import LINGER_MAX_BYTES
from tests.edit_service.conftest import example
from tests.helpers import MINIMAL_IFC, ok, poll

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(module_stack):
    """One stack for the module: each test uploads its own model or sends requests only."""
    return module_stack


def raw_request(stack, head: str, body: bytes = b"", timeout: float = 60) -> tuple[int, dict]:
    """Sends a request head (and optionally part of a body) and reads the answer without sending the rest."""
    with socket.create_connection(("127.0.0.1", stack.port), timeout=timeout) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < _content_length(answer):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    head_bytes, _, payload = answer.partition(b"\r\n\r\n")
    return int(head_bytes.split()[1]), json.loads(payload)


def _content_length(answer: bytes) -> int:
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


def test_a_body_over_the_route_limit_is_refused_before_it_is_sent(stack):
    """The server refuses a body from its Content-Length, before the application sees the request."""
    model_id = ok(stack.api("POST", "/api/v1/models", files={"file": ("a.ifc", MINIMAL_IFC)}))["id"]
    poll(lambda: list((stack.data_dir / "tmp").iterdir()), lambda left: not left, timeout=30)  # Django deletes the upload's temporary file after answering
    status, body = raw_request(stack, "POST /api/v1/models HTTP/1.1\nHost: 127.0.0.1\nContent-Type: multipart/form-data; boundary=b\nContent-Length: 50000000000\n")
    assert (status, body["code"]) == (400, 40002) and "MB" in body["message"]
    status, body = raw_request(stack, f"PUT /api/v1/models/{model_id}/script HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\nContent-Length: 20000000\n")
    assert (status, body["code"]) == (400, 40002)
    screenshot = f"POST /api/v1/models/{model_id}/issues HTTP/1.1\nHost: 127.0.0.1\nContent-Type: multipart/form-data; boundary=b\nContent-Length: 7000000\n"
    assert raw_request(stack, screenshot)[1]["code"] == 40002
    assert list((stack.data_dir / "tmp").iterdir()) == []


def test_a_chunked_body_is_cut_off_at_the_limit(stack):
    """The client goes on sending well past the route's limit and still reads the refusal (a lingering close), where
    a plain close would reset the connection under it. It sends 10 MB past the limit: within what the lingering close
    drops (LINGER_MAX_BYTES) before it cuts the connection, which a client sending still more would see."""
    model_id = ok(stack.api("POST", "/api/v1/models", files={"file": ("a.ifc", MINIMAL_IFC)}))["id"]
    chunk = b"x" * MEGABYTE
    overshoot_mb = 10
    assert overshoot_mb * MEGABYTE < LINGER_MAX_BYTES  # the test's own premise
    chunks = b"".join(b"%x\r\n" % len(chunk) + chunk + b"\r\n" for _ in range(SCRIPT_BODY_BYTES // MEGABYTE + overshoot_mb))
    status, body = raw_request(
        stack, f"PUT /api/v1/models/{model_id}/script HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\nTransfer-Encoding: chunked\n", chunks
    )
    assert (status, body["code"]) == (400, 40002)


def test_a_foreign_host_header_is_refused(stack):
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 must not drive the API."""
    refused = requests.get(f"{stack.url}/api/v1/models", headers={"Host": f"evil.example:{stack.port}"}, timeout=10)
    assert refused.status_code == 400 and refused.json()["code"] == 40001 and "evil.example" in refused.json()["message"]
    assert requests.get(f"http://localhost:{stack.port}/api/v1/models", timeout=10).json()["code"] == 0
    edit = requests.get(f"{stack.edit_url}/health", headers={"Host": f"evil.example:{stack.edit_port}"}, timeout=10)
    assert edit.status_code == 400


def test_a_deleted_model_stays_deleted(stack):
    model_id = ok(stack.api("POST", "/api/v1/models", files={"file": ("a.ifc", MINIMAL_IFC)}))["id"]
    base = f"/api/v1/models/{model_id}"
    ok(stack.api("PUT", f"{base}/script", json={"script": example("small_house")}))
    ok(stack.api("DELETE", base))
    folder = stack.data_dir / "models" / model_id
    assert stack.api("PUT", f"{base}/script", json={"script": example("small_house")}).json()["code"] == 40400
    assert stack.api("POST", f"{base}/script/run").json()["code"] == 40400
    for method, path in [("PUT", "/script"), ("POST", "/script/run"), ("POST", "/user-edits")]:
        assert stack.edit_call(method, f"/models/{model_id}{path}", json={"script": "x"}, timeout=30).status_code == 404
    assert not folder.exists()


def test_direct_edit_service_changes_are_converted_too(stack):
    """edit-call is not proxied; a model changed behind the gateway's back is noticed and converted again."""
    model_id = ok(stack.api("POST", "/api/v1/models", files={"file": ("a.ifc", MINIMAL_IFC)}))["id"]
    base = f"/api/v1/models/{model_id}"
    ok(stack.api("PUT", f"{base}/script", json={"script": example("small_house")}))
    ok(stack.api("POST", f"{base}/script/run"))
    assert stack.wait_model(model_id)["status"] == "ready"
    edited = stack.edit_call(
        "POST", f"/models/{model_id}/script/edit-call", json={"designKey": "door-entrance", "argument": "Name", "value": "Back door"},
    )
    assert edited.status_code == 200, edited.text
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        metadata = stack.api("GET", f"/v1/models/{model_id}/metadata.json").json()
        door = next((o for o in metadata["metaObjects"] if o["id"] == guid_for("door-entrance")), {})
        if door.get("name") == "Back door" and stack.api("GET", base).json()["data"]["status"] == "ready":
            break
        time.sleep(0.5)
    assert door.get("name") == "Back door"
