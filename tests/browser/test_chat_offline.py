"""The web client without a language model (no llmAPIKey), in a real Chromium against the real processes: the chat
panel says so, with how to configure one, as soon as it opens (before anything is sent); a message then gets the
same note and changes nothing. And a panel whose request fails says why instead of staying empty: the script
panel with the edit service down; a panel whose tab was chosen before the model opened loads once it has."""

from urllib.parse import urlsplit

import pytest

from tests.browser.conftest import wait_model_open
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def offline_stack(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("offline-web"), workers=1).start()  # no llmAPIKey in its configuration
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def model_id(offline_stack):
    created = offline_stack.api("POST", "/api/v1/chat/projects", json={"title": "Offline house", "kind": "ifc"}).json()["data"]
    assert offline_stack.wait_model(created["models"][0])["status"] == "ready"
    return created["models"][0]


def data(response):
    return response.json()["data"]


def test_the_chat_says_up_front_that_no_language_model_is_configured(page, offline_stack, model_id):
    versions = data(offline_stack.api("GET", f"/api/v1/models/{model_id}/edit/versions"))
    params = data(offline_stack.api("GET", f"/api/v1/models/{model_id}/script/params"))
    page.goto(f"{offline_stack.url}/#model={model_id}")
    wait_model_open(page)
    page.click("[data-tab=chat]")
    notice = page.locator("[data-testid=chat-offline-notice]")
    notice.wait_for(timeout=30_000)
    text = notice.inner_text()
    assert "No language model is configured" in text
    assert all(word in text for word in ("llmAPIKey", "llmBaseURL", "llmModel", "server_config.json", "demo"))
    assert page.locator("[data-testid=message-user]").count() == 0  # said before anything was sent
    page.shot("notice")

    page.fill("[data-testid=chat-input]", "Make the house three storeys and save it")
    page.click("[data-testid=send]")
    page.locator("[data-testid=message-assistant]", has_text="No language model is configured").wait_for(timeout=60_000)
    page.locator("[data-testid=turn-state]", has_text="idle").wait_for(timeout=30_000)
    assert page.locator("[data-testid=tool-card]").count() == 0 and page.locator("[data-testid=permission-card]").count() == 0
    assert notice.is_visible()
    assert data(offline_stack.api("GET", f"/api/v1/models/{model_id}/edit/versions")) == versions
    assert data(offline_stack.api("GET", f"/api/v1/models/{model_id}/script/params")) == params
    page.shot("answered")


def test_a_tab_chosen_before_the_model_opens_loads_its_panel_when_it_does(page, offline_stack, model_id):
    held = []
    model_list = lambda url: urlsplit(url).path == "/api/v1/models"  # noqa: E731 - the same matcher for unroute
    page.route(model_list, lambda route: held.append(route))  # the model opens once answered
    page.goto(f"{offline_stack.url}/#model={model_id}")
    page.wait_for_function("document.body && document.body.dataset.app === 'ready'", timeout=60_000)
    for _ in range(600):
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the model list was never asked for"
    page.click("[data-tab=script]")
    assert page.evaluate("viewerApp.model") is None, "the model opened before its list was answered"
    held[0].continue_()
    page.unroute(model_list)
    wait_model_open(page)
    page.locator("[data-testid=param-storeys]").wait_for(timeout=30_000)
    assert page.locator("[data-testid=script-load-error]").is_hidden()


def test_the_script_panel_says_why_when_its_requests_fail(page, offline_stack, model_id):
    page.goto(f"{offline_stack.url}/#model={model_id}")
    wait_model_open(page)
    page.click("[data-tab=script]")
    page.locator("[data-testid=param-storeys]").wait_for(timeout=30_000)
    assert page.locator("[data-testid=script-load-error]").is_hidden()
    offline_stack.kill("edit")
    try:
        page.goto(f"{offline_stack.url}/#model={model_id}")
        page.reload()
        page.wait_for_function("document.body && document.body.dataset.app === 'ready'", timeout=60_000)
        page.click("[data-tab=script]")
        failed = page.locator("[data-testid=script-load-error]")
        failed.wait_for(timeout=60_000)
        assert "Loading the script failed" in failed.inner_text()
        page.shot("edit-service-down")
    finally:
        offline_stack.start_edit_service()
