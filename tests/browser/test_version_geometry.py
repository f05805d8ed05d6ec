"""A version diff in the web client draws the elements removed since its base from the base version's geometry when
the current XKT no longer has them: the gateway converts the base version on request (its progress shown in the
diff panel), the view loads only those elements beside the current model, in red (pixel check at their screen
positions), selectable from the list, and unloads them when the diff is cleared or another one is shown."""

import pytest

from tests.browser.conftest import canvas_png, new_project, open_tab, pixel, screen_position
from tests.helpers import xkt_entity_ids

pytestmark = pytest.mark.e2e

# every state the diff panel shows for the base version's geometry, in order
RECORD_STATES_JS = """() => {
  window.baseGeometryStates = [];
  const element = document.querySelector('[data-testid=diff-base-geometry]');
  new MutationObserver(() => {
    const states = window.baseGeometryStates;
    if (!element.hidden && states[states.length - 1] !== element.dataset.state) states.push(element.dataset.state);
  }).observe(element, { attributes: true, childList: true, characterData: true, subtree: true });
}"""


def save_params(stack, model_id, **changes):
    params = stack.api("GET", f"/api/v1/models/{model_id}/script/params").json()["data"]
    assert stack.api("PUT", f"/api/v1/models/{model_id}/script", json={"params": {**params, **changes}}).json()["code"] == 0
    return stack.api("POST", f"/api/v1/models/{model_id}/script/save", json={"note": str(changes)}).json()["data"]["version"]


def compare(page, base, target):
    page.select_option("[data-testid=diff-base]", base)
    page.select_option("[data-testid=diff-target]", target)
    page.click("[data-testid=compare]")
    page.wait_for_function("([base, target]) => { const diff = viewerApp.loaded.diff.diff; return diff && diff.base === base && diff.target === target; }", arg=[base, target])


def version_model_loaded(page, model_id, version):
    return page.evaluate("(id) => Boolean(viewerApp.view3d.viewer.scene.models[id])", f"{model_id}@{version}")


def test_removed_elements_are_drawn_red_from_the_base_versions_geometry(page, web_stack):
    model_id = new_project(web_stack, "Shrunk")
    assert save_params(web_stack, model_id, storeys=2) == "v2"
    assert save_params(web_stack, model_id, storeys=1) == "v3"
    assert web_stack.wait_model(model_id, until=("ready",))["status"] == "ready"
    diff = web_stack.api("POST", f"/api/v1/models/{model_id}/edit/diff", json={"base": "v2", "target": "v3"}).json()["data"]
    removed = diff["removed"]
    assert len(removed) >= 5 and not diff["added"]
    current_ids = set(xkt_entity_ids(web_stack.api("GET", f"/v1/models/{model_id}/model.xkt").content))
    assert current_ids and not current_ids & set(removed)  # the current geometry has none of them

    open_tab(page, web_stack, model_id, "diff")
    page.locator("[data-testid=on-screen]", has_text="v3").wait_for()
    page.locator("[data-testid=diff-base-geometry]").wait_for(state="attached")
    page.evaluate(RECORD_STATES_JS)
    compare(page, "v2", "v3")
    page.locator("[data-testid=diff-base-geometry][data-state=loaded]").wait_for(timeout=300_000)
    states = page.evaluate("window.baseGeometryStates")
    assert states[0] in ("queued", "converting") and states[-2:] == ["loading", "loaded"], states
    assert page.locator("[data-testid=diff-warning]").is_hidden()
    assert version_model_loaded(page, model_id, "v2")
    drawn = page.evaluate("(ids) => ids.filter((id) => viewerApp.view3d.has(id))", removed)
    assert drawn and set(drawn) <= set(removed)
    assert page.evaluate("Object.keys(viewerApp.view3d.viewer.scene.models).length") == 2
    # only the removed elements came from v2: the current model's elements are not doubled
    assert set(page.evaluate("(id) => Object.keys(viewerApp.view3d.viewer.scene.models[id].objects)", f"{model_id}@v2")) == set(drawn)

    page.click("[data-testid=fit-all]")
    coloured = canvas_png(page)
    page.shot("removed-from-base")
    reds = 0
    for guid in drawn:
        position = screen_position(page, guid)
        if position is None:
            continue
        r, g, b = pixel(page, coloured, *position)
        assert r > g + 40 and r > b + 40, (guid, [r, g, b])  # red
        reds += 1
    assert reds > 0

    # the list selects and flies to a removed element drawn from the base version
    target = drawn[0]
    item = page.locator(f"[data-testid=diff-item][data-kind=removed][data-guid='{target}']")
    assert "absent" not in item.get_attribute("class")
    item.locator("button").click()
    assert page.evaluate("viewerApp.view3d.selectedIds()") == [target]

    # clearing the diff unloads the base version's elements
    page.click("[data-testid=clear-diff]")
    assert not version_model_loaded(page, model_id, "v2")
    assert page.evaluate("(ids) => ids.some((id) => viewerApp.view3d.has(id))", removed) is False
    assert page.evaluate("viewerApp.view3d.selectedIds()") == []

    # shown again (the geometry is ready now), then another diff unloads it
    page.evaluate(RECORD_STATES_JS)
    compare(page, "v2", "v3")
    page.locator("[data-testid=diff-base-geometry][data-state=loaded]").wait_for(timeout=60_000)
    assert page.evaluate("window.baseGeometryStates") == ["loading", "loaded"]
    assert version_model_loaded(page, model_id, "v2")
    compare(page, "v1", "v2")
    assert not version_model_loaded(page, model_id, "v2")
    assert page.locator("[data-testid=diff-base-geometry]").is_hidden()
