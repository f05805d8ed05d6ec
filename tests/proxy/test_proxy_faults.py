"""The gateway's edit-service proxy against a fake edit service: status mapping, faults, provenance, follow-ups."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.service_secret import HEADER as SECRET_HEADER
from core.service_secret import read_secret, secret_path
from issues_app.models import ChangeEntry
from models_app.models import IfcModel
from models_app.signals import version_saved
from models_app.storage import model_dir
from tests.e2e.stack import free_port

pytestmark = pytest.mark.django_db


class FakeEditService:
    """Answers every request with the configured (status, body, delay, headers) and records what it received."""

    def __init__(self):
        self.status, self.body, self.delay, self.headers = 200, {"ok": True}, 0.0, {}
        self.received = []
        self.received_headers = []
        self.peers = []  # the client address of each request: one per connection the gateway opened
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                fake.received.append((self.command, self.path, self.rfile.read(length).decode()))
                fake.received_headers.append(dict(self.headers))
                fake.peers.append(self.client_address)
                time.sleep(fake.delay)
                payload = fake.payload(self.command, self.path.split("?")[0])
                self.send_response(fake.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in fake.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def payload(self, method: str, path: str) -> bytes:
        """The body of the answer to a request (a subclass may answer by route)."""
        return self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def serving(viewer_config, service: FakeEditService):
    """A fixture's body: `service` is the gateway's edit service until the test ends."""
    viewer_config(editServiceURL=service.url)
    yield service
    service.close()


@pytest.fixture
def fake(viewer_config):
    yield from serving(viewer_config, FakeEditService())


@pytest.fixture
def model():
    record = IfcModel.objects.create(name="m.ifc", status="ready")
    model_dir(record.id).mkdir(parents=True)
    return record


def test_success_is_wrapped_and_query_and_body_are_passed_through(api, fake, model):
    fake.body = {"found": True, "line": 3}
    response = api.get(f"/api/v1/models/{model.id}/script/locate?guid=abc&x=1")
    assert response.json() == {"code": 0, "message": "ok", "data": {"found": True, "line": 3}}
    method, path, _ = fake.received[-1]
    assert (method, path) == ("GET", f"/models/{model.id}/script/locate?guid=abc&x=1")
    api.put(f"/api/v1/models/{model.id}/script", {"params": {"a": 1}, "note": "n"}, format="json")
    method, path, body = fake.received[-1]
    assert (method, path, json.loads(body)) == ("PUT", f"/models/{model.id}/script", {"params": {"a": 1}, "note": "n"})


@pytest.mark.parametrize(
    "route, edit_path",
    [("edit/pending", "/pending"), ("edit/history", "/history"), ("edit/versions", "/versions"), ("scripts", "/scripts"), ("script/params", "/script/params"), ("script/staging/diff", "/script/staging/diff")],
)
def test_read_routes_map_to_the_edit_service(api, fake, model, route, edit_path):
    assert api.get(f"/api/v1/models/{model.id}/{route}").json()["code"] == 0
    assert fake.received[-1][:2] == ("GET", f"/models/{model.id}{edit_path}")


@pytest.mark.parametrize(
    "status, body, code, message",
    [
        (404, {"detail": "version v9 not found"}, 40400, "version v9 not found"),
        (409, {"detail": "nothing to undo"}, 40900, "nothing to undo"),
        (422, {"detail": "ValueError: boom"}, 40001, "ValueError: boom"),
        (422, {"detail": [{"loc": ["body", "version"], "msg": "bad pattern", "type": "invalid"}]}, 40001, "version: bad pattern"),
        (500, {"detail": "internal error"}, 50200, "HTTP 500"),
        (410, {"detail": "retired"}, 50200, "HTTP 410"),
        (200, b"<html>not json</html>", 50200, "not JSON"),
    ],
)
def test_edit_service_answers_are_mapped(api, fake, model, status, body, code, message):
    fake.status, fake.body = status, body
    response = api.post(f"/api/v1/models/{model.id}/script/undo")
    assert response.json()["code"] == code
    assert message in response.json()["message"]
    if status == 422:
        assert response.json()["data"] == body["detail"]


def test_unreachable_edit_service_is_50200_quickly_and_changes_nothing(api, viewer_config, model):
    viewer_config(editServiceURL=f"http://127.0.0.1:{free_port()}")
    started = time.monotonic()
    response = api.post(f"/api/v1/models/{model.id}/script/save", {"note": "x"}, format="json")
    assert response.status_code == 502 and response.json()["code"] == 50200
    assert "unreachable" in response.json()["message"]
    assert time.monotonic() - started < 5
    model.refresh_from_db()
    assert model.status == "ready" and ChangeEntry.objects.count() == 0


def test_slow_edit_service_times_out_with_50200(api, fake, viewer_config, model):
    viewer_config(editServiceTimeoutSeconds=0.5)
    fake.delay = 2
    response = api.get(f"/api/v1/models/{model.id}/script")
    assert response.json()["code"] == 50200 and "0.5 s" in response.json()["message"]
    model.refresh_from_db()
    assert model.status == "ready"


def test_a_product_change_of_unknown_outcome_is_converted_anyway(api, fake, viewer_config, model):
    """The run may have finished after the gateway stopped waiting: converting once more is harmless."""
    viewer_config(editServiceTimeoutSeconds=0.5)
    fake.delay = 2
    response = api.post(f"/api/v1/models/{model.id}/script/run")
    assert response.json()["code"] == 50200
    model.refresh_from_db()
    assert model.status == "converting"


def test_idempotency_key_becomes_the_save_request_id(api, fake, model):
    fake.body = {"version": "v1", "diff": None}
    api.post(f"/api/v1/models/{model.id}/script/save", {"note": "n"}, format="json", HTTP_IDEMPOTENCY_KEY="save-7")
    assert json.loads(fake.received[-1][2]) == {"note": "n", "requestId": "save-7"}


def test_oversized_json_body_is_40002(api, fake, model):
    response = api.put(f"/api/v1/models/{model.id}/script", {"script": "x" * (11 * 1024 * 1024)}, format="json")
    assert (response.status_code, response.json()["code"]) == (400, 40002)
    assert fake.received == []


def test_a_body_that_is_not_an_object_is_40001(api, fake, model):
    response = api.put(f"/api/v1/models/{model.id}/script", [1, 2], format="json")
    assert (response.status_code, response.json()["code"]) == (400, 40001)
    assert fake.received == []


def test_bad_provenance_is_rejected_before_forwarding(api, fake, model):
    response = api.post(f"/api/v1/models/{model.id}/script/save", {"provenance": {"source": "ROBOT"}}, format="json")
    assert (response.status_code, response.json()["code"]) == (400, 40001)
    assert fake.received == []


def test_unknown_model_is_40400_without_forwarding(api, fake):
    assert api.get("/api/v1/models/m_ffffffffffffffff/script").json()["code"] == 40400
    assert api.get("/api/v1/models/nope/script").json()["code"] == 40400
    assert fake.received == []


def test_malformed_json_is_rejected_before_forwarding(api, fake, model):
    response = api.generic("PUT", f"/api/v1/models/{model.id}/script", "{bad", content_type="application/json")
    assert response.json()["code"] == 40001 and fake.received == []


def test_edit_call_and_direct_edit_routes_are_not_proxied(api, fake, model):
    for method, path in [("post", "script/edit-call"), ("put", "entities/2O2Fr$t4X7Zf8NOew3FLOH"), ("post", "commit"), ("post", "user-edits")]:
        response = getattr(api, method)(f"/api/v1/models/{model.id}/{path}", {}, format="json")
        assert response.status_code in (404, 405), path
    assert fake.received == []


@pytest.mark.parametrize("route", ["script/run", "script/rollback", "script/save", "script/discard"])
def test_successful_product_changes_queue_reconversion(api, fake, model, route):
    fake.body = {"ok": True, "version": "v1", "diff": None}
    assert api.post(f"/api/v1/models/{model.id}/{route}", {"version": "v1"}, format="json").json()["code"] == 0
    model.refresh_from_db()
    assert model.status == "converting" and model.job == "queued"


def test_failed_run_does_not_reconvert(api, fake, model):
    fake.status, fake.body = 422, {"detail": "boom"}
    api.post(f"/api/v1/models/{model.id}/script/run")
    model.refresh_from_db()
    assert model.status == "ready"


SAVE_ANSWER = {
    "version": "v2",
    "diff": {"added": [], "removed": [], "changed": [{"guid": "2O2Fr$t4X7Zf8NOew3FLOH", "changes": [
        {"field": "Name", "old": "Wall", "new": "North wall"},
        {"field": "Pset_WallCommon.IsExternal", "old": False, "new": True},
    ]}]},
}


def test_save_writes_one_change_entry_per_changed_field(api, fake, model):
    fake.body = SAVE_ANSWER
    response = api.post(f"/api/v1/models/{model.id}/script/save", {"note": "n", "author": "ana", "provenance": {"source": "AI"}}, format="json")
    assert response.json()["code"] == 0 and "warning" not in response.json()["data"]
    entries = api.get(f"/api/v1/models/{model.id}/changes").json()["data"]
    assert sorted((e["field"], e["oldValue"], e["newValue"]) for e in entries) == [("Name", "Wall", "North wall"), ("Pset_WallCommon.IsExternal", "false", "true")]
    assert {(e["operation"], e["author"], e["provenance"]["source"], e["entityName"]) for e in entries} == {("update", "ana", "AI", "North wall")}
    assert {e["diff"]["version"] for e in entries} == {"v2"}


@pytest.fixture
def broken_change_log():
    def broken(**kwargs):
        raise RuntimeError("database is gone")

    version_saved.connect(broken)
    yield
    version_saved.disconnect(broken)


def test_change_log_failure_after_save_is_a_warning(api, fake, model, broken_change_log):
    fake.body = SAVE_ANSWER
    response = api.post(f"/api/v1/models/{model.id}/script/save", {}, format="json")
    assert response.status_code == 200 and response.json()["code"] == 0
    assert "database is gone" in response.json()["data"]["warning"]
    assert response.json()["data"]["version"] == "v2"


def test_every_call_carries_the_service_secret_of_the_data_directory(api, fake, model, settings):
    api.get(f"/api/v1/models/{model.id}/script")
    api.post(f"/api/v1/models/{model.id}/script/undo")
    secret = read_secret(settings.VIEWER.dataDir)  # created by the gateway's first call: it came first
    assert [headers.get(SECRET_HEADER) for headers in fake.received_headers] == [secret, secret]
    assert oct(secret_path(settings.VIEWER.dataDir).stat().st_mode & 0o777) == "0o600"


def test_a_busy_sandbox_is_503_with_retry_after(api, fake, model):
    """The edit service's sandbox queue is full: the client learns when to come back, and nothing was queued."""
    fake.status, fake.body, fake.headers = 503, {"detail": "the sandbox queue is full"}, {"Retry-After": "7"}
    response = api.post(f"/api/v1/models/{model.id}/script/run")
    assert response.status_code == 503 and response["Retry-After"] == "7"
    assert response.json()["code"] == 50200 and "sandbox is busy" in response.json()["message"]
    model.refresh_from_db()
    assert model.status == "ready"


def test_a_503_without_retry_after_stays_a_plain_upstream_failure(api, fake, model):
    fake.status, fake.body = 503, {"detail": "isolation unavailable"}
    response = api.post(f"/api/v1/models/{model.id}/script/run")
    assert (response.status_code, response.json()["code"]) == (502, 50200) and "Retry-After" not in response
