"""The attack of issue 31, finding 1, in real Chromium: a page served from another origin posts forms to a real edit
service process (`fetch(..., {mode: "no-cors", body: FormData})`, which a browser sends without a preflight) and
nothing changes: no new version, the script and the history as they were."""

import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.edit_service.conftest import example
from tests.edit_service.test_api import EditService

pytestmark = pytest.mark.e2e

ATTACK = """<!doctype html><title>cute cats</title><script>
const base = %(base)s;
const form = fields => { const body = new FormData(); for (const [k, v] of Object.entries(fields)) body.append(k, v); return body; };
const attempts = [
  ["POST", "/script/rollback", "no-cors", form({version: "v1"})],
  ["POST", "/script/save", "no-cors", form({note: "made by a cross-origin page", author: "attacker"})],
  ["POST", "/script/edit-call", "no-cors", form({designKey: "door-entrance", argument: "Name", value: "Pwned door"})],
  ["POST", "/script/save", "no-cors", form({note: "made by a cross-origin page"})],
  ["PUT", "/script", "cors", form({script: "PARAMS = {}\\n"})],
];
window.outcomes = [];
(async () => {
  for (const [method, path, mode, body] of attempts) {
    try {
      const response = await fetch(base + path, {method, mode, body});
      window.outcomes.push(response.type);
    } catch (error) {
      window.outcomes.push(error.name);
    }
  }
  window.attackDone = true;
})();
</script>"""


class AttackerSite:
    """A tiny web server on another port of this machine (so another origin) serving the attacker's page."""

    def __init__(self, target_base: str):
        page = (ATTACK % {"base": json.dumps(target_base)}).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/cats.html"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def saved_model(tmp_path):
    service = EditService(tmp_path).start()
    model_id = "m_" + secrets.token_hex(8)
    (tmp_path / "models" / model_id).mkdir(parents=True)
    model = f"/models/{model_id}"
    assert service.call("PUT", f"{model}/script", json={"script": example("small_house")}).status_code == 200
    assert service.call("POST", f"{model}/script/save", json={"note": "v1"}).status_code == 200
    assert service.call("PUT", f"{model}/script", json={"script": example("small_house").replace("Small house", "Staged house")}).status_code == 200
    yield service, model
    service.stop()


def _state(service, model) -> dict:
    """Everything the attack aims at, read as the gateway reads it (with the secret)."""
    return {path: service.call("GET", f"{model}{path}").json() for path in ("/versions", "/script", "/history")}


def test_a_cross_origin_page_changes_nothing(browser, saved_model):
    service, model = saved_model
    before = _state(service, model)
    assert [v["version"] for v in before["/versions"]["versions"]] == ["v1"] and before["/script"]["source"] == "staging"
    site = AttackerSite(f"{service.url}{model}")
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(site.url)
        page.wait_for_function("window.attackDone === true", timeout=180_000)
        outcomes = page.evaluate("window.outcomes")
    finally:
        context.close()
        site.close()
    # the four forms reached the service (an opaque answer, not a network error); the PUT's preflight was refused
    assert outcomes == ["opaque"] * 4 + ["TypeError"], outcomes
    assert _state(service, model) == before
