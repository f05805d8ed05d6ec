"""The 3D view's keys in a real Chromium: clicking the model takes the focus from a field, so the view's keys (H hide,
...) act on the picked element instead of typing into the field; an error inside the viewer shows as an error toast."""

import pytest

from tests.browser.conftest import upload_ready, wait_model_open
from tests.e2e.stack import ROOT

pytestmark = pytest.mark.e2e

SAMPLE = ROOT.parent / "shared" / "ifc-samples" / "IfcOpenHouse_IFC4.ifc"


@pytest.fixture(scope="module")
def house(web_stack):
    return upload_ready(web_stack, SAMPLE)


def open_model(page, stack, model_id):
    page.goto(f"{stack.url}/#model={model_id}")
    wait_model_open(page)
    page.click("[data-testid=fit-all]")
    page.wait_for_timeout(800)


def canvas_centre(page):
    box = page.locator("[data-testid=canvas]").bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def test_clicking_the_model_takes_the_focus_from_a_field(page, web_stack, house):
    open_model(page, web_stack, house)
    page.click("[data-tab=issues]")
    title = page.locator("[data-testid=issue-title]")
    title.fill("abc")
    title.focus()
    page.mouse.click(*canvas_centre(page))
    page.wait_for_function("viewerApp.view3d.selectedIds().length === 1")
    (picked,) = page.evaluate("viewerApp.view3d.selectedIds()")
    assert page.evaluate("document.activeElement === viewerApp.view3d.viewer.scene.canvas.canvas")
    page.keyboard.press("h")
    assert title.input_value() == "abc"
    assert page.evaluate(f"viewerApp.view3d.viewer.scene.objects['{picked}'].visible") is False
    # typing in the field again types there, and the view ignores the keys
    title.click()
    page.keyboard.press("u")
    assert title.input_value() == "abcu"
    assert page.evaluate(f"viewerApp.view3d.viewer.scene.objects['{picked}'].visible") is False


def test_an_error_of_the_viewer_shows_as_an_error_toast(page, web_stack, house):
    """xeokit reports its errors on the console and as the scene's "error" event: the user sees them."""
    open_model(page, web_stack, house)
    page.evaluate("viewerApp.view3d.viewer.camera.projection = 'fisheye'")  # xeokit: unsupported, back to perspective
    toast = page.locator(".toast.error", has_text="The 3D view failed")
    toast.wait_for()
    assert "Unsupported value for 'projection': fisheye" in toast.inner_text()
