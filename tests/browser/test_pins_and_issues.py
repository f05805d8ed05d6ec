"""Pinning a check's failures from the checks tab, against the real stack with a check worker: one issue per failing
specification (its failing elements selected by its viewpoint), the IDS badge, opening the issue and "Fly to"
selecting and framing those elements, per element only after a confirmation above the threshold; and an issue made
with nothing picked, about the current view."""

import time

import pytest

from tests.browser.conftest import open_tab, upload_ready
from tests.e2e.stack import ROOT, Stack
from tests.helpers import sample

pytestmark = pytest.mark.e2e

IDS = ROOT / "checks_app" / "examples" / "review-basics.ids"

ON_SCREEN_JS = """(ids) => {
  const viewer = viewerApp.view3d.viewer;
  const [width, height] = [viewer.scene.canvas.canvas.clientWidth, viewer.scene.canvas.canvas.clientHeight];
  return ids.every((id) => {
    const aabb = viewer.scene.objects[id].aabb;
    const [x, y] = viewer.camera.projectWorldPos([(aabb[0] + aabb[3]) / 2, (aabb[1] + aabb[4]) / 2, (aabb[2] + aabb[5]) / 2]);
    return x >= 0 && y >= 0 && x <= width && y <= height;
  });
}"""


@pytest.fixture(scope="module")
def pins_stack(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("pins-web"), workers=1).start()
    stack.start_check_worker()
    yield stack
    stack.stop()


def finished_check(stack, model_id: str) -> dict:
    started = stack.api("POST", f"/api/v1/models/{model_id}/checks", files={"ids": ("review-basics.ids", IDS.read_bytes())}).json()["data"]
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        check = stack.api("GET", f"/api/v1/models/{model_id}/checks/{started['checkId']}").json()["data"]
        if check["status"] in ("done", "failed"):
            assert check["status"] == "done", check["error"]
            return check
        time.sleep(0.5)
    raise AssertionError("the check did not finish")


def selected(page) -> list[str]:
    return sorted(page.evaluate("viewerApp.view3d.selectedIds()"))


def test_pin_per_specification_open_and_fly_to_select_the_elements(page, pins_stack):
    stack = pins_stack
    model_id = upload_ready(stack, sample("duplex.ifc"))
    check = finished_check(stack, model_id)
    failing = [spec for spec in check["result"]["specifications"] if spec["status"] == "fail"]
    walls = next(spec for spec in failing if spec["name"] == "Walls have a fire rating")
    open_tab(page, stack, model_id, "checks")
    page.locator("[data-testid=spec-item]").first.wait_for()
    assert page.locator("[data-testid=check-pin-mode]").input_value() == "specification"

    page.click("[data-testid=check-pin]")
    page.locator("[data-testid=check-pin-counts]").wait_for()
    assert page.locator("[data-testid=check-pin-counts]").inner_text() == f"Issues: {len(failing)} created, 0 reopened, 0 resolved, 0 unchanged"
    pinned = stack.api("GET", f"/api/v1/models/{model_id}/issues").json()["data"]
    assert sorted(issue["title"] for issue in pinned) == sorted(f"IDS: {spec['name']}" for spec in failing)
    issue = next(issue for issue in pinned if issue["title"] == "IDS: Walls have a fire rating")
    guids = sorted({failure["guid"] for failure in walls["failures"]})
    assert sorted(c["ifc_guid"] for c in issue["viewpoints"][0]["components"]["selection"]) == guids and len(guids) > 1
    present = sorted(page.evaluate("(ids) => ids.filter((id) => viewerApp.view3d.has(id))", guids))
    assert len(present) > 1
    # the web client gives each new issue the view its viewpoint frames as snapshot (the server cannot render)
    page.locator("[data-testid=issue-item] img.thumb").nth(len(failing) - 1).wait_for(state="attached", timeout=30_000)
    pinned = stack.api("GET", f"/api/v1/models/{model_id}/issues").json()["data"]
    assert all(issue["screenshot"] and issue["viewpoints"][0]["snapshot"]["snapshot_type"] == "png" for issue in pinned)
    snapshot = stack.api("GET", f"/v1/models/{model_id}/{next(i for i in pinned if i['title'] == issue['title'])['screenshot']}").content
    assert snapshot.startswith(b"\x89PNG")
    page.shot("pinned")

    page.evaluate("viewerApp.view3d.select(null)")
    page.click("[data-tab=issues]")
    item = page.locator("[data-testid=issue-item]", has_text="IDS: Walls have a fire rating")
    item.wait_for()
    assert item.locator("[data-testid=issue-source]").inner_text() == "IDS"
    item.locator("[data-testid=issue-open]").click()
    page.wait_for_function("(n) => viewerApp.view3d.selectedIds().length === n", arg=len(present))
    assert selected(page) == present and page.evaluate(ON_SCREEN_JS, present)
    page.shot("opened")

    page.click("[data-testid=issue-back]")
    page.evaluate("viewerApp.view3d.select(null)")
    page.evaluate("viewerApp.view3d.viewer.camera.eye = [500, 500, 500]")  # away from the walls
    item.locator("[data-testid=fly-to]").click()
    page.wait_for_function("(n) => viewerApp.view3d.selectedIds().length === n", arg=len(present))
    assert selected(page) == present and page.evaluate(ON_SCREEN_JS, present)

    # per element: more new issues than the threshold need the user's confirmation
    elements = sum(len({f["guid"] for f in spec["failures"]}) or 1 for spec in failing)
    assert elements > 25
    page.click("[data-tab=checks]")
    page.select_option("[data-testid=check-pin-mode]", "element")
    dialogs = []
    page.once("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.click("[data-testid=check-pin]")
    for _ in range(100):
        if dialogs:
            break
        page.wait_for_timeout(100)
    assert dialogs == [f"Pin {elements} issues, one per failing element?"]
    assert len(stack.api("GET", f"/api/v1/models/{model_id}/issues").json()["data"]) == len(failing)
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("[data-testid=check-pin]")
    page.locator("[data-testid=check-pin-counts]", has_text=f"Issues: {elements} created").wait_for()
    assert len(stack.api("GET", f"/api/v1/models/{model_id}/issues").json()["data"]) == len(failing) + elements


def test_an_issue_is_made_with_nothing_picked(page, pins_stack):
    model_id = upload_ready(pins_stack, sample("duplex.ifc"), "general.ifc")
    open_tab(page, pins_stack, model_id, "issues")
    page.evaluate("viewerApp.view3d.select(null)")
    page.locator("[data-testid=issue-heading]", has_text="current view").wait_for()
    page.fill("[data-testid=issue-title]", "The entrance looks too narrow")
    page.click("[data-testid=create-issue]")
    page.locator("[data-testid=issue-item]", has_text="The entrance looks too narrow").wait_for()
    (issue,) = pins_stack.api("GET", f"/api/v1/models/{model_id}/issues").json()["data"]
    assert issue["entityId"] == "" and issue["viewpoints"][0]["perspective_camera"] is not None and issue["screenshot"]
    page.shot("general-issue")
