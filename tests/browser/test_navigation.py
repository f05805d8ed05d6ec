"""Navigating a real sample (AC20-FZK-Haus.ifc, converted by the real stack) with xeokit's own plugins: the object
tree lists the storeys and isolating one from its context menu changes the picture; X-ray, a section plane (add,
flip, clear), the storey plan, search and keys; a measured distance matches the model's dimension."""

import pytest

from tests.browser.conftest import canvas_png, changed_fraction, upload_ready, wait_model_open
from tests.helpers import sample

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def haus(web_stack):
    return upload_ready(web_stack, sample("AC20-FZK-Haus.ifc"))


def open_haus(page, web_stack, haus):
    page.goto(f"{web_stack.url}/#model={haus}")
    wait_model_open(page)
    page.locator("[data-testid=tree-containment] li span", has_text="Erdgeschoss").wait_for()


def menu_item(page, title):
    return page.locator(".xeokit-context-menu-item:visible", has_text=title).first


def test_the_tree_lists_the_storeys_and_isolating_one_changes_the_picture(page, web_stack, haus):
    open_haus(page, web_stack, haus)
    # nothing animates on an opened, idle model: xeokit's hidden busy spinners (the 3D view's, the navigation cube's)
    # had kept their endless CSS animations running, composing frames at 60 a second
    assert page.evaluate("document.getAnimations().map((a) => a.animationName)") == []
    tree = page.locator("[data-testid=tree-containment]")
    titles = tree.locator("li > span").all_inner_texts()
    assert {"Erdgeschoss", "Dachgeschoss"} <= set(titles), titles
    storeys = page.evaluate("Object.values(viewerApp.view3d.viewer.metaScene.metaObjects).filter((m) => m.type === 'IfcBuildingStorey').map((m) => m.name)")
    assert sorted(storeys) == ["Dachgeschoss", "Erdgeschoss"]
    # a click in the tree selects without collapsing what is expanded
    ground = tree.locator("li:has(> span:text-is('Erdgeschoss'))")
    ground.locator("> a.plus").click()
    child = ground.locator("> ul > li > span").first
    child.click()
    assert page.locator("[data-testid=picked-name]").inner_text() == child.inner_text()
    assert ground.locator("> ul").count() == 1 and ground.locator("> a.minus").count() == 1
    before = canvas_png(page)
    page.shot("tree")

    tree.locator("li > span", has_text="Dachgeschoss").click(button="right")
    menu_item(page, "Isolate").click()
    page.wait_for_timeout(800)  # the camera flies to the storey
    after = canvas_png(page)
    page.shot("isolated")
    assert changed_fraction(page, before, after) > 0.05
    visible = page.evaluate("viewerApp.view3d.viewer.scene.visibleObjectIds.length")
    total = page.evaluate("viewerApp.view3d.viewer.scene.objectIds.length")
    assert 0 < visible < total
    # the tree's checkboxes follow: the other storey is unchecked
    assert not tree.locator("li:has(> span:text-is('Erdgeschoss')) > input[type=checkbox]").is_checked()
    assert tree.locator("li:has(> span:text-is('Dachgeschoss')) > input[type=checkbox]").is_checked()

    page.click("[data-testid=show-all]")
    assert page.evaluate("viewerApp.view3d.viewer.scene.visibleObjectIds.length") == total


def test_xray_and_a_section_plane_change_the_picture(page, web_stack, haus):
    open_haus(page, web_stack, haus)
    plain = canvas_png(page)
    page.click("[data-testid=xray]")
    xrayed = canvas_png(page)
    page.shot("xray")
    assert changed_fraction(page, plain, xrayed) > 0.05
    page.click("[data-testid=xray]")
    assert changed_fraction(page, plain, canvas_png(page)) < 0.01

    page.click("[data-testid=tool-section]")
    box = page.locator("[data-testid=canvas]").bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # on the roof
    page.wait_for_function("Object.keys(viewerApp.view3d.sections.sectionPlanes).length === 1")
    page.keyboard.press("Escape")  # back to picking; the plane stays
    cut = canvas_png(page)
    page.shot("section")
    assert changed_fraction(page, plain, cut) > 0.02
    page.click("[data-testid=section-flip]")
    flipped = canvas_png(page)
    page.shot("section-flipped")
    assert changed_fraction(page, cut, flipped) > 0.02
    page.click("[data-testid=section-clear]")
    assert page.evaluate("Object.keys(viewerApp.view3d.sections.sectionPlanes).length") == 0
    assert changed_fraction(page, plain, canvas_png(page)) < 0.01


def test_search_keys_and_the_storey_plan(page, web_stack, haus):
    open_haus(page, web_stack, haus)
    guid = page.evaluate("Object.values(viewerApp.view3d.viewer.metaScene.metaObjects).find((m) => m.type === 'IfcDoor').id")
    page.fill("[data-testid=tree-search]", guid[:10])
    page.locator("[data-testid=tree-result]").first.click()
    assert page.locator("[data-testid=picked-name]").inner_text()
    assert page.evaluate("viewerApp.view3d.selectedIds()") == [guid]
    assert page.locator(".highlighted-node").count() == 1  # TreeViewPlugin.showNode revealed it
    page.fill("[data-testid=tree-search]", "dachgeschoss")
    assert page.locator("[data-testid=tree-result]", has_text="Dachgeschoss").count() == 1

    total = page.evaluate("viewerApp.view3d.viewer.scene.objectIds.length")
    page.evaluate("document.activeElement.blur()")  # keys act on the view, not while typing in a field
    page.keyboard.press("h")
    assert page.evaluate("viewerApp.view3d.viewer.scene.visibleObjectIds.length") == total - 1
    page.keyboard.press("i")
    assert page.evaluate("viewerApp.view3d.viewer.scene.visibleObjectIds") == [guid]
    page.keyboard.press("u")
    assert page.evaluate("viewerApp.view3d.viewer.scene.visibleObjectIds.length") == total

    before = canvas_png(page)
    ground = page.evaluate("viewerApp.view3d.storeys().find((s) => s.name === 'Erdgeschoss').id")
    page.select_option("[data-testid=plan-storey]", ground)
    page.locator("[data-testid=storey-map]").wait_for()
    assert page.evaluate("viewerApp.view3d.viewer.camera.projection") == "ortho"
    plan = canvas_png(page)
    page.shot("plan")
    assert changed_fraction(page, before, plan) > 0.05
    assert page.evaluate("document.querySelector('[data-testid=storey-map]').naturalWidth") > 100
    page.click("[data-testid=plan-exit]")
    assert page.evaluate("viewerApp.view3d.viewer.camera.projection") == "perspective"
    assert page.evaluate("viewerApp.view3d.viewer.scene.visibleObjectIds.length") == total


def test_a_measured_distance_matches_the_model(page, web_stack):
    """The skeleton project's building is PARAMS length (10 m) long: measured with the mouse between the top corners
    of its long side, seen from above in the storey plan, with snapping to vertices."""
    page.goto(web_stack.url + "/")
    page.on("dialog", lambda dialog: dialog.accept("Measured"))
    page.click("[data-testid=new-project]")
    item = page.locator("[data-testid=model-item]", has_text="Measured")
    item.locator("[data-testid=model-status]", has_text="ready").wait_for(timeout=180_000)
    model_id = item.get_attribute("data-model-id")
    length = web_stack.api("GET", f"/api/v1/models/{model_id}/script/params").json()["data"]["length"]
    item.locator(".open").click()
    wait_model_open(page)
    storey = page.evaluate("viewerApp.view3d.storeys()[0].id")
    page.select_option("[data-testid=plan-storey]", storey)
    page.locator("[data-testid=storey-map]").wait_for()
    page.wait_for_timeout(500)
    # the top corners of the long horizontal side, as canvas positions (a hair inside, the snapping does the rest)
    corners = page.evaluate("""() => {
      const viewer = viewerApp.view3d.viewer;
      const [x0, y0, z0, x1, y1, z1] = viewer.scene.getAABB(viewer.scene.visibleObjectIds);
      const alongX = x1 - x0 >= z1 - z0;
      const a = alongX ? [x0, y1, z0] : [x0, y1, z0];
      const b = alongX ? [x1, y1, z0] : [x0, y1, z1];
      const inset = (p, q) => p.map((v, i) => v + (q[i] - v) * 0.004);
      return [viewer.camera.projectWorldPos(inset(a, b)), viewer.camera.projectWorldPos(inset(b, a))];
    }""")
    box = page.locator("[data-testid=canvas]").bounding_box()
    page.click("[data-testid=tool-measure]")
    for x, y in corners:
        page.mouse.move(box["x"] + x + 3, box["y"] + y + 3)
        page.mouse.move(box["x"] + x, box["y"] + y, steps=3)
        page.wait_for_timeout(300)
        page.mouse.down()
        page.mouse.up()
        page.wait_for_timeout(300)
    page.shot("measured")
    measured = page.evaluate("Object.values(viewerApp.view3d.measurements.measurements).map((m) => m.length)")
    assert len(measured) == 1, measured
    assert measured[0] == pytest.approx(length, rel=0.01), (measured, length)


def test_a_long_model_list_leaves_the_object_tree_its_room(page, web_stack, haus):
    """With many models (here the list's answer repeats the opened one 40 times) the list scrolls on its own and the
    tree keeps the rest of the side panel: it had been squeezed to nothing, its nodes under the footer."""
    def many_models(route, request):
        response = route.fetch()
        listed = response.json()
        listed["data"] = listed["data"] + [{**model, "id": f"{model['id']}-copy{copy}"} for copy in range(40) for model in listed["data"][:1]]
        route.fulfill(response=response, json=listed)

    page.route("**/api/v1/models", many_models)
    open_haus(page, web_stack, haus)
    sizes = page.evaluate("""() => ({
      list: [document.getElementById("model-list").clientHeight, document.getElementById("model-list").scrollHeight],
      tree: document.querySelector("[data-testid=tree-containment]").getBoundingClientRect().height,
      panel: document.querySelector("aside.models").clientHeight,
    })""")
    assert sizes["list"][1] > sizes["list"][0], sizes  # the list scrolls
    assert sizes["tree"] > sizes["panel"] / 3, sizes
    page.locator("[data-testid=tree-containment] li:has(> span:text-is('Erdgeschoss')) > a.plus").click(timeout=10_000)
