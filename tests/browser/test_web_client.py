"""A reviewer's day in the browser: upload, open, pick, pin an issue with a screenshot, override a property, edit
PARAMS and save, compare versions, chat without a language model (its notice, the demonstration on a copy); plus
the token prompt and a failed conversion."""

import base64
import json

import pytest

from tests.e2e.stack import Stack
from tests.helpers import sample

pytestmark = pytest.mark.e2e

# Share of an image's pixels that are not the canvas background [0.93, 0.94, 0.96]: 0 when WebGL drew nothing.
PAINTED_FRACTION_JS = """async (src) => {
  const image = new Image(); image.src = src; await image.decode();
  const canvas = document.createElement("canvas"); canvas.width = image.width; canvas.height = image.height;
  const context = canvas.getContext("2d"); context.drawImage(image, 0, 0);
  const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
  let painted = 0;
  for (let i = 0; i < data.length; i += 4) if (Math.abs(data[i] - 237) + Math.abs(data[i + 1] - 240) + Math.abs(data[i + 2] - 245) > 30) painted++;
  return painted / (data.length / 4);
}"""


def painted_fraction(page, png: bytes) -> float:
    return page.evaluate(PAINTED_FRACTION_JS, "data:image/png;base64," + base64.b64encode(png).decode())


@pytest.fixture(scope="module")
def web_stack(own_web_stack):
    """A stack of its own: the review starts from an empty model list and finds its upload by the file's name."""
    return own_web_stack


def model_item(page, name):
    return page.locator("[data-testid=model-item]", has_text=name)


def open_model(page, name):
    item = model_item(page, name)
    item.locator("[data-testid=model-status]", has_text="ready").wait_for(timeout=180_000)
    item.locator(".open").click()
    page.wait_for_function("document.querySelector('[data-testid=stage-state]').hidden", timeout=60_000)


def pick_center(page):
    box = page.locator("[data-testid=canvas]").bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.locator("[data-testid=picked-name]").wait_for(timeout=10_000)


def test_review_an_uploaded_model(page, web_stack):
    page.goto(web_stack.url + "/")
    page.locator("[data-testid=models-empty]").wait_for()
    page.shot("empty")
    page.set_input_files("[data-testid=upload]", str(sample("duplex.ifc")))
    item = model_item(page, "duplex.ifc")
    item.locator(".progress, [data-testid=model-status]:has-text('ready')").first.wait_for(timeout=60_000)
    page.shot("converting")
    open_model(page, "duplex.ifc")
    canvas = page.locator("[data-testid=canvas]").screenshot()
    assert painted_fraction(page, canvas) > 0.05, "the 3D view rendered nothing"
    page.shot("opened")

    pick_center(page)
    picked = page.locator("[data-testid=picked-name]").inner_text()
    page.shot("picked")

    page.fill("[data-testid=override-FireRating]", "EI60")
    page.click("[data-testid=save-overrides]")
    page.locator(".overridden").first.wait_for()
    model_id = item.get_attribute("data-model-id")
    overrides = web_stack.api("GET", f"/api/v1/models/{model_id}/overrides").json()["data"]
    assert [fields for fields in overrides.values()] == [{"FireRating": "EI60"}]
    page.shot("override")

    page.click("[data-tab=issues]")
    page.fill("[data-testid=issue-title]", "Check the fire rating")
    page.fill("[data-testid=issue-comment]", "EI60 needed here")
    # picking again (nothing, then the same element) must not redraw the half-typed issue
    box = page.locator("[data-testid=canvas]").bounding_box()
    page.mouse.click(box["x"] + 5, box["y"] + box["height"] - 5)
    page.locator("[data-testid=issue-heading]", has_text="pick an element first").wait_for()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.locator("[data-testid=issue-heading]", has_text=picked).wait_for()
    assert page.locator("[data-testid=issue-title]").input_value() == "Check the fire rating"
    assert page.locator("[data-testid=issue-comment]").input_value() == "EI60 needed here"
    page.click("[data-testid=create-issue]")
    page.locator("[data-testid=issue-item]").first.wait_for()
    issue = web_stack.api("GET", f"/api/v1/models/{model_id}/issues").json()["data"][0]
    assert issue["title"] == "Check the fire rating" and issue["entityName"] == picked and len(issue["camera"]["eye"]) == 3
    screenshot = web_stack.api("GET", f"/v1/models/{model_id}/{issue['screenshot']}").content
    assert screenshot.startswith(b"\x89PNG") and painted_fraction(page, screenshot) > 0.05
    page.shot("issue")

    page.select_option("[data-testid=issue-status]", "checking")
    page.wait_for_timeout(500)
    assert web_stack.api("GET", f"/api/v1/models/{model_id}/issues").json()["data"][0]["status"] == "checking"
    # status and text are answered by the API's filters: wait for the count the answer draws
    page.select_option("[data-testid=issue-filter-status]", "resolved")
    page.locator("[data-testid=issue-count]", has_text="0 of 1 issues").wait_for()
    assert page.locator("[data-testid=issue-item]").count() == 0
    page.select_option("[data-testid=issue-filter-status]", "")
    page.select_option("[data-testid=issue-filter-source]", "UI")
    page.locator("[data-testid=issue-count]", has_text="1 of 1 issues").wait_for()
    assert page.locator("[data-testid=issue-item]").count() == 1
    page.fill("[data-testid=issue-search]", "no such words")
    page.locator("[data-testid=issue-count]", has_text="0 of 1 issues").wait_for()
    assert page.locator("[data-testid=issue-item]").count() == 0
    page.fill("[data-testid=issue-search]", "ei60")  # the comment, any case
    page.locator("[data-testid=issue-count]", has_text="1 of 1 issues").wait_for()
    assert page.locator("[data-testid=issue-item]").count() == 1
    page.click("[data-testid=issue-open]")
    detail = page.locator("[data-testid=issue-detail]")
    assert detail.locator("h3").inner_text() == "Check the fire rating"
    assert detail.locator("[data-testid=issue-screenshot]").evaluate("(image) => image.complete && image.naturalWidth") > 300
    page.shot("issue-detail")
    page.click("[data-testid=issue-back]")
    page.click("[data-testid=fly-to]")
    page.shot("fly-to")

    with page.expect_download() as download:
        page.click("[data-testid=bcf-export]")
    archive = download.value.path()
    assert download.value.suggested_filename == f"{model_id}-issues.bcfzip"
    assert web_stack.api("DELETE", f"/api/v1/models/{model_id}/issues/{issue['id']}").json()["code"] == 0
    page.set_input_files("[data-testid=bcf-import]", str(archive))
    page.locator(".toast", has_text="Imported 1 issue(s), updated 0, skipped 0").wait_for()
    page.locator("[data-testid=issue-item]", has_text="Check the fire rating").wait_for()
    (restored,) = web_stack.api("GET", f"/api/v1/models/{model_id}/issues").json()["data"]
    assert (restored["title"], restored["entityId"], restored["status"], restored["camera"]) == (issue["title"], issue["entityId"], "checking", issue["camera"])
    assert web_stack.api("GET", f"/v1/models/{model_id}/{restored['screenshot']}").content == screenshot
    page.shot("bcf-imported")


def test_edit_params_save_compare_and_chat(page, web_stack):
    page.goto(web_stack.url + "/")
    page.on("dialog", lambda dialog: dialog.accept("Browser house"))
    page.click("[data-testid=new-project]")
    open_model(page, "Browser house.ifc")
    page.shot("project")

    page.click("[data-tab=script]")
    page.click(".raw-json > summary")
    params_box = page.locator("[data-testid=params]")
    params = json.loads(params_box.input_value())
    params_box.fill(json.dumps({**params, "storeys": 2}, indent=2))
    assert page.locator("[data-testid=param-storeys]").input_value() == "2"  # the form follows the raw JSON
    page.click("[data-testid=stage-params]")
    page.locator("[data-testid=script-state]", has_text="Staged").wait_for()
    page.locator("[data-testid=staging-diff]", has_text='"storeys": 2').wait_for()
    page.click("[data-testid=run]")
    page.locator("[data-testid=script-state]", has_text="built").wait_for(timeout=60_000)
    page.shot("run")
    page.click("[data-testid=save]")
    page.locator("[data-testid=script-state]", has_text="version v2").wait_for(timeout=60_000)
    page.wait_for_function("document.querySelector('[data-testid=stage-state]').hidden", timeout=120_000)
    page.shot("saved")

    page.click("[data-tab=diff]")
    page.locator("[data-testid=diff-base]").wait_for()
    page.select_option("[data-testid=diff-base]", "v1")
    page.select_option("[data-testid=diff-target]", "v2")
    page.click("[data-testid=compare]")
    assert page.locator("[data-testid=diff-counts]").inner_text().startswith("6 added")
    page.shot("diff")

    page.click("[data-tab=chat]")
    # no language model here: the panel says so before anything is sent, and a question gets the same note
    page.locator("[data-testid=chat-offline-notice]").wait_for(timeout=30_000)
    page.fill("[data-testid=chat-input]", "Which fire rating do the walls have?")
    page.click("[data-testid=send]")
    page.locator("[data-testid=message-assistant]", has_text="No language model is configured").wait_for(timeout=60_000)
    page.locator("[data-testid=turn-state]", has_text="idle").wait_for()
    assert page.locator("[data-testid=tool-card]").count() == 0
    # the demonstration, asked for by name: on a copy of the model, asking before it copies and before it saves
    page.fill("[data-testid=chat-input]", "demo")
    page.click("[data-testid=send]")
    page.locator("[data-testid=tool-card][data-tool=session_info]").wait_for(timeout=30_000)
    card = page.locator("[data-testid=permission-card]")
    card.wait_for(timeout=60_000)
    assert "demo_copy" in card.inner_text()
    card.locator("[data-testid=permission-once]").click()
    page.locator("[data-testid=tool-card][data-tool=run_script]").wait_for(timeout=120_000)
    card.wait_for(timeout=60_000)
    assert "save_version" in card.inner_text()
    page.shot("question")
    card.locator("[data-testid=permission-once]").click()
    page.locator("[data-testid=message-assistant]", has_text="That was the whole loop").wait_for(timeout=120_000)
    page.locator("[data-testid=turn-state]", has_text="idle").wait_for()
    assert page.locator("[data-testid=permission-card]").count() == 0
    model_id = model_item(page, "Browser house.ifc").get_attribute("data-model-id")
    versions = web_stack.api("GET", f"/api/v1/models/{model_id}/edit/versions").json()["data"]["versions"]
    assert [v["version"] for v in versions] == ["v1", "v2"]  # the model itself as it was
    copy_id = model_item(page, "Browser house (demo copy).ifc").get_attribute("data-model-id")
    copied = web_stack.api("GET", f"/api/v1/models/{copy_id}/edit/versions").json()["data"]["versions"]
    assert [v["version"] for v in copied] == ["v1", "v2"]  # the copy, and the demonstration's change saved on it
    page.shot("answered")


def test_a_token_is_asked_for_and_a_failed_conversion_can_be_retried(page, tmp_path):
    guarded = Stack(tmp_path, workers=1, token="browser-token").start()
    try:
        broken = b"ISO-10303-21;\nHEADER;\nFILE_SCHEMA(('IFC4'));\nENDSEC;\nDATA;\n#1=IFCWALL(garbage\nENDSEC;\n"
        guarded.api("POST", "/api/v1/models", files={"file": ("broken.ifc", broken)})
        page.goto(guarded.url + "/")
        page.locator("[data-testid=token-dialog]").wait_for()
        page.shot("token")
        page.fill("[data-testid=token-input]", "browser-token")
        page.keyboard.press("Enter")
        item = model_item(page, "broken.ifc")
        item.locator("[data-testid=model-status]", has_text="failed").wait_for(timeout=120_000)
        assert item.locator("[data-testid=model-error]").inner_text()
        page.shot("failed")
        item.locator("[data-testid=retry]").click()
        item.locator("[data-testid=model-status]", has_text="failed").wait_for(timeout=120_000)
    finally:
        guarded.stop()


def allow_once(page) -> None:
    card = page.locator("[data-testid=permission-card]")
    card.wait_for(timeout=60_000)
    card.locator("[data-testid=permission-once]").click()
    page.wait_for_function("document.querySelectorAll('[data-testid=permission-card]').length === 0")


def test_a_cad_project_is_drawn_by_the_agent_and_shown_in_2d(page, tmp_path):
    """New CAD project -> its chat -> the agent (fake OpenAI server) runs init_model -> the drawing opens as SVG from
    render.json; an element is picked by its key; a PARAMS change through the agent redraws it."""
    from tests.fake_openai import FakeOpenAI, Reply

    fake = FakeOpenAI()
    stack = Stack(tmp_path, workers=1, config={"llmAPIKey": "k", "llmBaseURL": fake.url, "llmModel": "fake"}).start()
    try:
        page.goto(stack.url + "/")
        page.on("dialog", lambda dialog: dialog.accept("Flat"))
        page.click("[data-testid=more-actions]")
        page.click("[data-testid=new-cad-project]")
        page.locator("[data-testid=chat-input]").wait_for()
        fake.script(Reply().tool("init_model", {"title": "Flat"}), Reply().text("The drawing is ready."))
        page.fill("[data-testid=chat-input]", "Draw a flat")
        page.click("[data-testid=send]")
        allow_once(page)  # init_model creates a model: the user is asked
        drawing = page.locator("[data-testid=drawing]")
        drawing.locator("[data-key=wall-south]").wait_for(state="attached", timeout=60_000)  # a horizontal line has no height: never "visible"
        assert drawing.is_visible()
        assert drawing.locator("line[data-key^=wall-]").count() == 4 and drawing.locator("text[data-key=label-room]").text_content() == "Flat"
        assert page.locator("[data-testid=canvas]").is_hidden()
        page.shot("drawing")
        drawing.locator("[data-key=wall-north]").click(force=True)
        assert page.locator("[data-testid=picked-name]").inner_text() == "wall-north"
        page.shot("picked")

        model_id = page.locator("[data-testid=model-item]").get_attribute("data-model-id")
        params = stack.api("GET", f"/api/v1/models/{model_id}/script/params").json()["data"]
        fake.script(Reply().tool("set_params", {"params": {**params, "length": 12.0}}), Reply().tool("run_script", {}),
                    Reply().tool("save_version", {"note": "longer"}), Reply().text("Longer now."))
        page.fill("[data-testid=chat-input]", "Make it 12 m long")
        page.click("[data-testid=send]")
        allow_once(page)  # save_version
        page.wait_for_function("document.querySelector('[data-key=wall-south]') && document.querySelector('[data-key=wall-south]').getAttribute('x2') === '12'", timeout=60_000)
        page.shot("redrawn")
    finally:
        stack.stop()
        fake.close()
