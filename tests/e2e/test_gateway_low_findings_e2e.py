"""Issue 31, finding 7, on a real gateway process (uvicorn): WebSocket upgrades, token guessing from one address,
many open event streams, an oversized script body."""

import http.client
import json
import socket

import psutil
import pytest

from serving.http_server import HEAD_MAX_BYTES
from tests.e2e.stack import Stack
from tests.helpers import poll

pytestmark = pytest.mark.e2e

TOKEN = "low-findings-token"
FAILURE_LIMIT = 5
STREAM_CAP = 200


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """The gateway process alone (no workers, no edit service): what these tests talk to."""
    running = Stack(tmp_path_factory.mktemp("low"), workers=0, token=TOKEN, config={
        "tokenFailureLimit": FAILURE_LIMIT, "tokenFailureWindowSeconds": 600, "maxStreamsPerClient": STREAM_CAP,
    })
    running.migrate()
    running.start_gateway()
    yield running
    running.stop()


def gateway_log(stack) -> str:
    return (stack.data_dir / "gateway.log").read_text(errors="replace")


def get_from(stack, source: str, path: str, token: str) -> http.client.HTTPResponse:
    """A GET sent from the local address `source` (any 127.x.y.z reaches the gateway on 127.0.0.1)."""
    connection = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=30, source_address=(source, 0))
    connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    response = connection.getresponse()
    response.body = json.loads(response.read())
    connection.close()
    return response


def websocket_handshake(stack, path: str) -> bytes:
    with socket.create_connection(("127.0.0.1", stack.port), timeout=30) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{stack.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode()
        )
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    return answer


@pytest.mark.parametrize("path", ["/", "/api/v1/models", "/api/v1/chat/sessions/c_0123456789abcdef/events", "/no/such/path"])
def test_a_websocket_upgrade_is_refused_without_a_traceback(gateway, path):
    answer = websocket_handshake(gateway, path)
    assert answer.startswith(b"HTTP/1.1 403"), answer[:200]
    assert gateway.api("GET", "/api/v1/models").json()["code"] == 0  # the gateway goes on serving
    log = gateway_log(gateway)
    assert "Traceback" not in log and "No application configured" not in log, log[-3000:]


def test_token_guessing_is_throttled_for_the_guessing_address_only(gateway):
    for _ in range(FAILURE_LIMIT):
        refused = get_from(gateway, "127.0.0.3", "/api/v1/models", "guess")
        assert (refused.status, refused.body["code"]) == (401, 40100)
    for token in ("another-guess", TOKEN):  # over the limit, the right token is refused too: a guess learns nothing
        throttled = get_from(gateway, "127.0.0.3", "/api/v1/models", token)
        assert (throttled.status, throttled.body["code"]) == (429, 42900), throttled.body
        assert 0 < int(throttled.getheader("Retry-After")) <= 600
    assert get_from(gateway, "127.0.0.4", "/api/v1/models", TOKEN).body["code"] == 0
    assert get_from(gateway, "127.0.0.4", "/api/v1/models", "guess").status == 401


def open_stream(stack, session_id: str) -> tuple[socket.socket, bytes]:
    """An event stream held open on a raw socket; its answer up to the first frame (or a whole refusal)."""
    sock = socket.create_connection(("127.0.0.1", stack.port), timeout=30)
    sock.sendall(f"GET /api/v1/chat/sessions/{session_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
    answer = b""
    while b"retry:" not in answer and b'"code"' not in answer:
        chunk = sock.recv(65536)
        if not chunk:
            break
        answer += chunk
    return sock, answer


def test_open_event_streams_hold_no_thread_and_are_capped_per_client(gateway):
    session_id = gateway.api("POST", "/api/v1/chat/sessions", json={"title": "streams", "modelId": ""}).json()["data"]["chatSessionId"]
    process = psutil.Process(gateway.processes["gateway"].pid)
    streams = []
    try:
        for _ in range(20):  # the thread pools the gateway starts on demand are up after the first few
            streams.append(open_stream(gateway, session_id))
        threads_at_20 = process.num_threads()
        while len(streams) < STREAM_CAP:
            streams.append(open_stream(gateway, session_id))
        assert all(answer.startswith(b"HTTP/1.1 200") for _, answer in streams)
        assert process.num_threads() < threads_at_20 + 10, (threads_at_20, process.num_threads())
        refused_sock, refused = open_stream(gateway, session_id)
        refused_sock.close()
        refusal = json.loads(refused.partition(b"\r\n\r\n")[2])
        assert refused.startswith(b"HTTP/1.1 429") and refusal["code"] == 42900 and "maxStreamsPerClient" in refusal["message"], refused
    finally:
        for sock, _ in streams:
            sock.close()
    # closed streams give their places back
    poll(lambda: open_stream(gateway, session_id), lambda opened: opened[0].close() or opened[1].startswith(b"HTTP/1.1 200"), timeout=30, interval=0.2)


def test_a_script_body_over_two_megabytes_is_refused_before_it_is_read(gateway):
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        sock.sendall(
            f"PUT /api/v1/models/m_0123456789abcdef/script HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Content-Type: application/json\r\nContent-Length: 3000000\r\n\r\n".encode()
        )
        head, _, body = sock.recv(65536).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and json.loads(body)["code"] == 40002, head + body


def test_an_oversized_request_head_is_refused_in_the_envelope_and_the_gateway_goes_on(gateway):
    """httptools alone collects any number of header bytes; the server stops at HEAD_MAX_BYTES with the spec's error."""
    padding = "x" * 1000
    headers = "".join(f"X-Pad-{index}: {padding}\r\n" for index in range(HEAD_MAX_BYTES // 1000 + 2))
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        sock.sendall(f"GET /api/v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n{headers}\r\n".encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), answer[:400]
    assert json.loads(body) == {"code": 40002, "message": f"request head exceeds the limit of {HEAD_MAX_BYTES // 1024} KB", "data": None}
    small = gateway.api("GET", "/api/v1/models", headers={"X-Pad": padding})
    assert small.json()["code"] == 0  # a head under the limit is served, and the gateway goes on serving


def test_each_request_leaves_one_access_log_line(gateway):
    marker = "/api/v1/models?access-log-probe=1"
    assert gateway.api("GET", marker).status_code == 200
    poll(lambda: gateway_log(gateway), lambda log: f'"GET {marker} HTTP/1.1" 200' in log, timeout=10)
