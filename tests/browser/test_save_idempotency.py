"""The web client's script save carries an Idempotency-Key, and retries a save whose answer was lost with the same
key: one version, its change-log entries written once (real Chromium, real stack; the lost answer is made by
Playwright's request interception: the save reaches the gateway, its answer never reaches the page)."""

from collections import Counter

import pytest

from tests.browser.conftest import new_project, open_tab, wait_model_open

pytestmark = pytest.mark.e2e


def test_a_save_whose_answer_was_lost_is_retried_with_its_key_and_saved_once(page, web_stack):
    model_id = new_project(web_stack, "Saved once")
    params = web_stack.api("GET", f"/api/v1/models/{model_id}/script/params").json()["data"]
    staged = web_stack.api("PUT", f"/api/v1/models/{model_id}/script", json={"params": {**params, "external_wall_fire_rating": "F90"}})
    assert staged.json()["code"] == 0
    keys = []

    def lose_the_first_answer(route, request):
        keys.append(request.headers.get("idempotency-key"))
        if len(keys) == 1:
            route.fetch(timeout=120_000)  # the gateway saves the version ...
            route.abort("connectionreset")  # ... and the page sees a network error
        else:
            route.continue_()

    page.route(f"**/api/v1/models/{model_id}/script/save", lose_the_first_answer)
    open_tab(page, web_stack, model_id, "script")
    page.locator("[data-testid=script-state]", has_text="Staged").wait_for()
    page.click("[data-testid=save]")
    page.locator("[data-testid=script-state]", has_text="version v2").wait_for(timeout=120_000)

    assert len(keys) == 2 and keys[0] and keys[0] == keys[1], keys
    versions = web_stack.api("GET", f"/api/v1/models/{model_id}/edit/versions").json()["data"]["versions"]
    assert [v["version"] for v in versions] == ["v1", "v2"]
    changes = web_stack.api("GET", f"/api/v1/models/{model_id}/changes").json()["data"]
    assert changes and {c["diff"]["version"] for c in changes} == {"v2"}
    assert max(Counter((c["entityId"], c["field"]) for c in changes).values()) == 1

    page.unroute(f"**/api/v1/models/{model_id}/script/save")
    assert web_stack.api("PUT", f"/api/v1/models/{model_id}/script", json={"params": {**params, "storeys": 3}}).json()["code"] == 0
    page.reload()
    wait_model_open(page)
    page.click("[data-tab=script]")
    page.locator("[data-testid=script-state]", has_text="Staged").wait_for()
    with page.expect_request(f"**/api/v1/models/{model_id}/script/save") as second_save:
        page.click("[data-testid=save]")
    assert second_save.value.headers.get("idempotency-key") not in (None, keys[0])  # a new key per save action
