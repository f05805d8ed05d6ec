"""A BCF client's sign-in in a real browser: IfcOpenShell's bcf-client opens the consent URL, headless Chromium signs
in on the sign-in page and allows on the consent page, and the browser's redirect reaches the client's listener on
localhost:8080 under the consent page's own Content-Security-Policy (its form-action names the redirect's origin:
Chromium checks the redirect after the form's POST against it). The pages are not let off their policy here."""

from __future__ import annotations

import queue
import threading

import pytest
from bcf.v3 import bcfapi

from tests.e2e.stack import Stack
from tests.e2e.test_bcf_client import CALLBACK_PORT, PASSWORD, REDIRECT_URI, USERNAME, _manage, _personal_session, _port_free

pytestmark = pytest.mark.e2e


@pytest.fixture
def consent_stack(tmp_path):
    assert _port_free(CALLBACK_PORT), f"port {CALLBACK_PORT} is taken: bcf-client's sign-in listens there (fixed)"
    stack = Stack(tmp_path, workers=0)
    stack.migrate()
    _manage(stack, "user", "create", USERNAME, "--role", "user", "--display-name", "Rita Reviewer", "--password", "-", stdin=PASSWORD + "\n")
    stack.start_gateway()
    yield stack
    stack.stop()


def test_a_browser_signs_in_and_allows_a_bcf_client(consent_stack, browser, monkeypatch):
    stack = consent_stack
    rest = _personal_session(stack)
    project = rest.post(f"{stack.url}/api/v1/chat/projects", json={"title": "Tower", "kind": "ifc", "skeleton": False}, timeout=60).json()["data"]
    _manage(stack, "createapplication", "confidential", "authorization-code", "--name", "Solibri BCF Live", "--client-id", "solibri",
            "--client-secret", "s3cret-" + "x" * 40, "--redirect-uris", REDIRECT_URI)

    opened: queue.Queue[str] = queue.Queue()
    monkeypatch.setattr(bcfapi.webbrowser, "open", lambda url, *args, **kwargs: opened.put(url) or True)
    foundation = bcfapi.FoundationClient("solibri", "s3cret-" + "x" * 40, base_url=stack.url + "/", redirect_subdir="callback")
    client = bcfapi.BcfClient(foundation)
    client.set_version(next(v for v in foundation.get_versions() if v["api_id"] == "bcf"))
    answers: dict[str, object] = {}
    signing_in = threading.Thread(target=lambda: answers.setdefault("projects", client.get_projects()), daemon=True)
    signing_in.start()  # blocks in the client's listener until the browser comes back

    context = browser.new_context(viewport={"width": 1000, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if "Content Security Policy" in message.text else None)
    page.goto(opened.get(timeout=30))
    page.fill("[data-testid=sign-in-username]", USERNAME)
    page.fill("[data-testid=sign-in-password]", PASSWORD)
    page.click("[data-testid=sign-in-submit]")
    page.locator("[data-testid=consent-form]").wait_for()
    assert "Solibri BCF Live" in page.locator("[data-testid=consent-client]").inner_text()
    assert page.locator("[data-testid=consent-scopes] li").count() == 2
    page.click("[data-testid=consent-allow]")
    page.wait_for_url(f"{REDIRECT_URI}?*", timeout=30_000)
    assert "You have now authenticated" in page.content()
    context.close()

    signing_in.join(30)
    assert not signing_in.is_alive() and errors == []
    assert answers["projects"] == [{"project_id": project["projectId"], "name": "Tower", "authorization": {"project_actions": ["update", "createDocument"]}}]
    assert foundation.access_token.startswith("bmo_")
