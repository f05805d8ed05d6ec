"""Editing the build script like code and reviewing a version change in 3D, on a skeleton project of the real stack
(agent on the local fake OpenAI server): an unsaved edit survives the agent's staging, PARAMS as a typed form, a
failed run's error on its line, version history with notes / per-version diff / rollback, and the diff coloured in
3D with the unchanged elements ghosted (pixel checks at the elements' screen positions)."""

import pytest

from tests.browser.conftest import canvas_png, new_project, open_tab, pixel, screen_position
from tests.e2e.stack import Stack
from tests.fake_openai import Reply

pytestmark = pytest.mark.e2e

MARK = "# my unsaved note"


@pytest.fixture(scope="module")
def agent_stack(tmp_path_factory, fake):
    stack = Stack(tmp_path_factory.mktemp("script"), workers=1, config={"llmAPIKey": "k", "llmBaseURL": fake.url, "llmModel": "fake"}).start()
    yield stack
    stack.stop()


def editor_text(page):
    return page.evaluate("viewerApp.loaded.script.editorText()")


def test_an_unsaved_edit_survives_the_agents_staging(page, agent_stack, fake):
    model_id = new_project(agent_stack, "Edited")
    open_tab(page, agent_stack, model_id, "script")
    page.locator(".cm-content").wait_for()
    page.locator("[data-testid=script-state]", has_text="Saved").wait_for()
    original = editor_text(page)
    page.locator(".cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.type(f"\n{MARK}\n")
    assert MARK in editor_text(page)
    page.locator("[data-testid=param-storey_height]").fill("3.5")  # a half-edited PARAMS field too

    params = agent_stack.api("GET", f"/api/v1/models/{model_id}/script/params").json()["data"]
    fake.script(Reply().tool("set_params", {"params": {**params, "storeys": 3}}), Reply().tool("run_script", {}), Reply().text("Three storeys staged."))
    page.click("[data-tab=chat]")
    page.fill("[data-testid=chat-input]", "Make it three storeys")
    page.click("[data-testid=send]")
    page.locator("[data-testid=message-assistant]", has_text="Three storeys staged.").wait_for(timeout=60_000)
    page.locator("[data-testid=staged-badge]").wait_for()
    page.click("[data-tab=script]")
    page.locator("[data-testid=script-conflict]").wait_for(timeout=30_000)
    page.locator("[data-testid=script-state]", has_text="Staged").wait_for()
    assert MARK in editor_text(page), "the agent's staging must not replace an edited script"
    assert page.locator("[data-testid=param-storey_height]").input_value() == "3.5"
    page.shot("conflict")

    page.click("[data-testid=conflict-load]")
    text = editor_text(page)
    assert MARK not in text and '"storeys": 3' in text and text != original
    assert page.locator("[data-testid=param-storeys]").input_value() == "3"


def test_params_form_error_line_and_version_history(page, agent_stack):
    model_id = new_project(agent_stack, "Versions")
    open_tab(page, agent_stack, model_id, "script")
    page.locator("[data-testid=param-storeys]").wait_for()
    assert page.locator("[data-testid=param-storeys]").get_attribute("type") == "number"
    assert page.locator("[data-testid=param-name]").get_attribute("type") == "text"
    page.locator("[data-testid=param-storeys]").fill("2")
    page.locator("[data-testid=param-external_wall_fire_rating]").fill("F90")
    page.click("[data-testid=stage-params]")
    page.locator("[data-testid=script-state]", has_text="Staged").wait_for()
    params = agent_stack.api("GET", f"/api/v1/models/{model_id}/script/params").json()["data"]
    assert params["storeys"] == 2 and params["external_wall_fire_rating"] == "F90" and params["storey_height"] == 3.0
    page.fill("[data-testid=save-note]", "two storeys, F90 walls")
    page.click("[data-testid=save]")
    page.locator("[data-testid=script-state]", has_text="version v2").wait_for(timeout=90_000)
    page.click(".versions-box > summary")
    page.locator("[data-testid=version-item][data-version=v2]", has_text="two storeys, F90 walls").wait_for()
    page.locator("[data-testid=version-item][data-version=v2] [data-testid=version-changes]").click()
    assert page.locator("[data-testid=version-diff] [data-testid=diff-counts]").inner_text().startswith("6 added · 0 removed · 4 changed")
    page.shot("history")

    # a failing script: its error is shown and its line marked in the editor
    script = agent_stack.api("GET", f"/api/v1/models/{model_id}/script").json()["data"]["script"]
    lines = script.splitlines()
    body = next(i for i, line in enumerate(lines) if line.startswith("def build(")) + 1
    broken = "\n".join([*lines[:body], '    raise ValueError("no building today")', *lines[body:]]) + "\n"
    page.evaluate("(text) => { const editor = viewerApp.loaded.script.editor; editor.dispatch({changes: {from: 0, to: editor.state.doc.length, insert: text}}); }", broken)
    page.click("[data-testid=stage-script]")
    page.locator("[data-testid=script-state]", has_text="Staged").wait_for()
    page.click("[data-testid=run]")
    error = page.locator("[data-testid=run-error]")
    error.wait_for(timeout=60_000)
    assert "no building today" in error.inner_text()
    assert page.locator("[data-testid=error-line]").inner_text().endswith(f"line {body + 1}")
    assert page.evaluate("(({editor}) => editor.state.doc.lineAt(editor.state.selection.main.head).number)(viewerApp.loaded.script)") == body + 1
    assert page.locator(".cm-lintRange-error").count() >= 1
    page.shot("error-line")

    page.on("dialog", lambda dialog: dialog.accept())
    page.locator("[data-testid=version-item][data-version=v1] [data-testid=version-rollback]").click()
    page.wait_for_function("viewerApp.loaded.script.editorText().includes('\"storeys\": 1')", timeout=60_000)
    assert "no building today" not in editor_text(page)
    assert agent_stack.api("GET", f"/api/v1/models/{model_id}/script/params").json()["data"]["storeys"] == 1


def test_a_diff_colours_the_changed_elements_in_3d(page, agent_stack):
    model_id = new_project(agent_stack, "Compared")
    params = agent_stack.api("GET", f"/api/v1/models/{model_id}/script/params").json()["data"]
    agent_stack.api("PUT", f"/api/v1/models/{model_id}/script", json={"params": {**params, "storeys": 2, "external_wall_fire_rating": "F90"}})
    assert agent_stack.api("POST", f"/api/v1/models/{model_id}/script/save", json={"note": "v2"}).json()["code"] == 0
    agent_stack.wait_model(model_id, until=("ready",))
    open_tab(page, agent_stack, model_id, "diff")
    page.locator("[data-testid=on-screen]", has_text="v2").wait_for()
    plain = canvas_png(page)
    page.select_option("[data-testid=diff-base]", "v1")
    page.select_option("[data-testid=diff-target]", "v2")
    page.click("[data-testid=compare]")
    page.locator("[data-testid=diff-counts]").wait_for()
    diff = agent_stack.api("POST", f"/api/v1/models/{model_id}/edit/diff", json={"base": "v1", "target": "v2"}).json()["data"]
    assert len(diff["added"]) == 6 and len(diff["changed"]) == 4
    assert page.locator("[data-testid=diff-warning]").is_hidden()
    coloured = canvas_png(page)
    page.shot("diff")
    unchanged = [guid for guid in page.evaluate("viewerApp.view3d.viewer.scene.objectIds") if guid not in diff["added"] and guid not in {c["guid"] for c in diff["changed"]}]
    assert unchanged and page.evaluate("(ids) => ids.every((id) => viewerApp.view3d.viewer.scene.objects[id].xrayed)", unchanged)

    checked = {"added": 0, "changed": 0}
    for kind, ids in (("added", diff["added"]), ("changed", [c["guid"] for c in diff["changed"]])):
        for guid in ids:
            position = screen_position(page, guid)
            if position is None:
                continue
            r, g, b = pixel(page, coloured, *position)
            before = pixel(page, plain, *position)
            if kind == "added":
                assert g > r + 40 and g > b + 40, (guid, [r, g, b], before)  # green
            else:
                assert r > g + 30 and g > b + 20, (guid, [r, g, b], before)  # orange
            checked[kind] += 1
    assert checked["added"] > 0 and checked["changed"] > 0, checked

    # the list selects and flies to an element
    target = diff["changed"][0]["guid"]
    page.locator(f"[data-testid=diff-item][data-guid='{target}'] button").click()
    assert page.evaluate("viewerApp.view3d.selectedIds()") == [target]

    # v2 -> v1: the elements v1 lacks are "removed", drawn red from the loaded v2 geometry; v1 is not on screen
    page.select_option("[data-testid=diff-base]", "v2")
    page.select_option("[data-testid=diff-target]", "v1")
    page.click("[data-testid=compare]")
    page.locator("[data-testid=diff-warning]").wait_for()
    assert "v1" in page.locator("[data-testid=diff-warning]").inner_text()
    page.click("[data-testid=fit-all]")
    removed = canvas_png(page)
    page.shot("removed")
    reds = 0
    for guid in diff["added"]:
        position = screen_position(page, guid)
        if position:
            r, g, b = pixel(page, removed, *position)
            assert r > g + 40 and r > b + 40, (guid, [r, g, b])
            reds += 1
    assert reds > 0
