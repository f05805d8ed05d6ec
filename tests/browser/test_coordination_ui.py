"""The federated view and the Coordination tab in a real browser, against the real processes.

Two IFC4 models hold the same box at different local origins (one of them turned 90 degrees), and their
IfcMapConversions put the two boxes back on the same place of the map: opened as a project (#project=p_...), the two
boxes take the same place in the 3D view (their world boxes agree to the millimetre, at the place the project frame
says) and the same pixels on the canvas. The Coordination tab then defines a hard clash test between the two models,
runs it, lists the clash, flies to it with the pair alone in two colours, and sets its review status and assignee."""

import json
import re
import signal

import numpy as np
import pytest

from tests.browser.conftest import canvas_png, changed_fraction, data_url, wait_model_open
from tests.e2e.stack import ROOT

pytestmark = pytest.mark.e2e

BOX_A = {"corner": (10, 5, 0), "size": (2, 1, 3), "eastings": 1000.0, "northings": 2000.0}
# turned 90 degrees (its x axis is the map's north), 10 m east and 5 m north of A's origin: the same box on the map
BOX_B = {"corner": (0, -2, 0), "size": (1, 2, 3), "eastings": 1010.0, "northings": 2005.0, "abscissa": 0.0, "ordinate": 1.0}
# the box in the project frame (origin: A's map conversion, whole metres), Z up, as xeokit's Y-up world box
# [xmin, ymin, zmin, xmax, ymax, zmax]: IFC (x, y, z) is shown at (x, z, -y)
BOX_IN_VIEW = [10, 0, -6, 12, 3, -5]


# fraction of the pixels drawn (differing from the empty canvas `e` by more than 8) in exactly one of `a` and `b`
COVERAGE_DIFFERENCE_JS = """async ([e, a, b]) => {
  const read = async (src) => { const image = new Image(); image.src = src; await image.decode();
    const c = document.createElement("canvas"); c.width = image.width; c.height = image.height;
    const x = c.getContext("2d"); x.drawImage(image, 0, 0); return x.getImageData(0, 0, c.width, c.height).data; };
  const [empty, first, second] = [await read(e), await read(a), await read(b)];
  const drawn = (p, i) => Math.abs(p[i] - empty[i]) + Math.abs(p[i + 1] - empty[i + 1]) + Math.abs(p[i + 2] - empty[i + 2]) > 8;
  let differing = 0;
  for (let i = 0; i < empty.length; i += 4) if (drawn(first, i) !== drawn(second, i)) differing++;
  return differing / (empty.length / 4);
}"""


def route_missing(name: str) -> str | None:
    from django.urls import NoReverseMatch, reverse

    run = {"project_id": "p_0", "name": "t", "run_id": "r_0"}
    kwargs = {"project-federation": {"project_id": "p_0"}, "clash-test": {"project_id": "p_0", "name": "t"},
              "clash-runs": {"project_id": "p_0", "name": "t"}, "clash-list": run, "clash-run-issues": run,
              "clash-detail": {**run, "clash_id": "c_0"}}[name]
    try:
        reverse(name, kwargs=kwargs)
    except NoReverseMatch:
        return f"the route {name} is not there yet"
    return None


def boxed_model(path, *, corner, size, eastings, northings, abscissa=1.0, ordinate=0.0, name="Box", copies=1, step=(0, 0, 0)) -> str:
    """An IFC4 file in metres with `copies` wall-shaped boxes (the k-th's corner at `corner` + k * `step` in the model's
    own frame) and a map conversion (map unit: the project's, metres); returns the first box's GlobalId."""
    from ifcopenshell.api import aggregate, context, geometry, georeference, root, spatial, unit
    from ifcopenshell.api import project as project_api

    model = project_api.create_file(version="IFC4")
    project = root.create_entity(model, ifc_class="IfcProject", name=name)
    unit.assign_unit(model, units=[unit.add_si_unit(model, unit_type=kind) for kind in ("LENGTHUNIT", "AREAUNIT", "VOLUMEUNIT")])  # metres
    model_context = context.add_context(model, context_type="Model")
    body = context.add_context(model, context_type="Model", context_identifier="Body", target_view="MODEL_VIEW", parent=model_context)
    georeference.add_georeferencing(model)
    georeference.edit_georeferencing(model, projected_crs={"Name": "EPSG:7856"}, coordinate_operation={
        "Eastings": eastings, "Northings": northings, "OrthogonalHeight": 0.0, "XAxisAbscissa": abscissa, "XAxisOrdinate": ordinate, "Scale": 1.0})
    site = root.create_entity(model, ifc_class="IfcSite", name="Site")
    building = root.create_entity(model, ifc_class="IfcBuilding", name="Building")
    storey = root.create_entity(model, ifc_class="IfcBuildingStorey", name="Level 0")
    aggregate.assign_object(model, relating_object=project, products=[site])
    aggregate.assign_object(model, relating_object=site, products=[building])
    aggregate.assign_object(model, relating_object=building, products=[storey])
    representation = geometry.add_wall_representation(model, context=body, length=size[0], height=size[2], thickness=size[1])
    boxes = [root.create_entity(model, ifc_class="IfcWall", name=name if k == 0 else f"{name} {k}") for k in range(copies)]
    for k, box in enumerate(boxes):
        geometry.assign_representation(model, product=box, representation=representation)
        placement = np.eye(4)
        placement[:3, 3] = np.add(corner, np.multiply(step, k))
        geometry.edit_object_placement(model, product=box, matrix=placement, is_si=True)
    spatial.assign_container(model, relating_structure=storey, products=boxes)
    model.write(str(path))
    return boxes[0].GlobalId


def boxed_project(stack, folder, title, a, b) -> dict:
    """A project (no skeleton model) with box models `a` (ARC) and `b` (STR) (boxed_model's keywords) uploaded into it:
    {projectId, a, b} (a, b: {id, guid})."""
    for name in ("project-federation",):
        if missing := route_missing(name):
            pytest.skip(missing)
    project = stack.api("POST", "/api/v1/chat/projects", json={"title": title, "kind": "ifc", "skeleton": False}).json()["data"]
    models = {}
    for key, box, discipline in (("a", a, "ARC"), ("b", b, "STR")):
        path = folder / f"{key}.ifc"
        guid = boxed_model(path, name=f"{key.upper()} box", **box)
        with open(path, "rb") as handle:
            answer = stack.api("POST", "/api/v1/models", files={"file": (f"{key}.ifc", handle)},
                               data={"projectId": project["projectId"], "discipline": discipline}).json()
        assert answer["code"] == 0, answer
        assert stack.wait_model(answer["data"]["id"])["status"] == "ready"
        models[key] = {"id": answer["data"]["id"], "guid": guid}
    return {"projectId": project["projectId"], **models}


@pytest.fixture(scope="module")
def boxes(web_stack, tmp_path_factory):
    """A project with the two box models BOX_A and BOX_B (the same box on the map): see boxed_project."""
    return boxed_project(web_stack, tmp_path_factory.mktemp("boxes"), "Boxes", BOX_A, BOX_B)


def open_project(page, stack, project_id):
    page.goto(f"{stack.url}/#project={project_id}")
    page.wait_for_function("viewerApp.view3d.federated && viewerApp.view3d.modelIds().length === 2", timeout=120_000)
    wait_model_open(page)


def world_box(page, guid):
    return page.evaluate("(guid) => Array.from(viewerApp.view3d.viewer.scene.objects[guid].aabb)", guid)


def test_two_models_placed_by_map_conversion_meet_at_the_same_pixels(page, web_stack, boxes):
    open_project(page, web_stack, boxes["projectId"])
    a, b = boxes["a"], boxes["b"]
    assert sorted(page.evaluate("viewerApp.view3d.modelIds()")) == sorted([a["id"], b["id"]])
    # each entity keeps its model
    assert page.evaluate("(ids) => ids.map((id) => viewerApp.view3d.modelOf(id))", [a["guid"], b["guid"]]) == [a["id"], b["id"]]
    box_a, box_b = world_box(page, a["guid"]), world_box(page, b["guid"])
    assert np.allclose(box_a, BOX_IN_VIEW, atol=0.001), box_a
    assert np.allclose(box_b, BOX_IN_VIEW, atol=0.001), box_b
    # the tree has one root per model, named by discipline and file name
    page.locator("[data-testid=tree-containment]").get_by_text("ARC · a.ifc").wait_for()
    page.locator("[data-testid=tree-containment]").get_by_text("STR · b.ifc").wait_for()

    # hidden one at a time from the Coordination tab's model list: each box alone draws the same pixels
    page.click("[data-tab=coordination]")
    row = {key: page.locator(f"[data-testid=coord-model][data-model-id={boxes[key]['id']}]") for key in ("a", "b")}
    row["a"].wait_for()
    assert row["a"].locator("[data-testid=coord-model-discipline]").inner_text() == "ARC"
    page.evaluate("viewerApp.view3d.fit([])")  # both boxes framed
    page.wait_for_timeout(800)
    both = canvas_png(page)
    row["b"].locator("[data-testid=coord-model-visible]").uncheck()
    only_a = canvas_png(page)
    page.shot("only-a")
    row["b"].locator("[data-testid=coord-model-visible]").check()
    row["a"].locator("[data-testid=coord-model-visible]").uncheck()
    only_b = canvas_png(page)
    page.shot("only-b")
    assert page.evaluate("(guid) => viewerApp.view3d.viewer.scene.objects[guid].visible", a["guid"]) is False
    page.evaluate("() => { const s = viewerApp.view3d.viewer.scene; s.setObjectsVisible(s.objectIds, false); }")
    empty = canvas_png(page)
    assert changed_fraction(page, empty, only_a) > 0.01, "box A draws on the canvas"
    # the same pixels covered (xeokit 2.6 shades a turned model's faces as if it were not turned: colours may differ)
    assert page.evaluate(COVERAGE_DIFFERENCE_JS, [data_url(empty), data_url(only_a), data_url(only_b)]) < 0.002
    assert page.evaluate(COVERAGE_DIFFERENCE_JS, [data_url(empty), data_url(only_a), data_url(both)]) < 0.002

    # isolating a model shows it alone; X-ray applies to the whole model
    page.evaluate("() => { const s = viewerApp.view3d.viewer.scene; s.setObjectsVisible(s.objectIds, true); }")
    row["b"].locator("[data-testid=coord-model-isolate]").click()
    assert page.evaluate("(ids) => ids.map((id) => viewerApp.view3d.viewer.scene.objects[id].visible)", [a["guid"], b["guid"]]) == [False, True]
    row["b"].locator("[data-testid=coord-model-xray]").check()
    assert page.evaluate("(guid) => viewerApp.view3d.viewer.scene.objects[guid].xrayed", b["guid"]) is True

    # picking an element of the second model shows its properties and makes it the open model
    assert not row["a"].locator("[data-testid=coord-model-visible]").is_checked()
    page.click("[data-testid=show-all]")  # the tab's model list follows the view
    assert row["a"].locator("[data-testid=coord-model-visible]").is_checked()
    assert not row["b"].locator("[data-testid=coord-model-xray]").is_checked()
    page.evaluate("(guid) => viewerApp.view3d.select(guid)", b["guid"])
    page.wait_for_function("(id) => viewerApp.model && viewerApp.model.id === id", arg=b["id"])
    page.click("[data-tab=properties]")
    assert page.locator("[data-testid=picked-name]").inner_text() == "B box"


@pytest.fixture(scope="module")
def clash_worker(web_stack):
    """The worker of clash runs, beside the stack's conversion workers, for this module (the stack is shared)."""
    for name in ("clash-test", "clash-runs", "clash-list", "clash-detail"):
        if missing := route_missing(name):
            pytest.skip(missing)
    if not hasattr(web_stack, "start_clash_worker"):
        pytest.skip("the test stack starts no clash worker yet")
    web_stack.start_clash_worker()
    yield
    web_stack.kill("clashes0", signal.SIGTERM)


def test_the_coordination_tab_runs_a_clash_test_and_shows_a_clash(page, web_stack, boxes, clash_worker):
    a, b = boxes["a"], boxes["b"]
    open_project(page, web_stack, boxes["projectId"])
    page.click("[data-tab=coordination]")
    page.locator("[data-testid=coord-model]").first.wait_for()
    page.click("[data-testid=coord-test-new]")
    form = page.locator("[data-testid=coord-form]")
    form.locator("[data-testid=coord-form-name]").fill("arc-vs-str")
    form.locator("[data-testid=coord-form-type]").select_option("hard")
    form.locator(f"[data-testid=coord-form-a-model][value={a['id']}]").check()
    form.locator("[data-testid=coord-form-use-b]").check()
    form.locator(f"[data-testid=coord-form-b-model][value={b['id']}]").check()
    form.locator("[data-testid=coord-form-save]").click()
    test = page.locator("[data-testid=coord-test][data-name=arc-vs-str]")
    test.wait_for()
    saved = web_stack.api("GET", f"/api/v1/projects/{boxes['projectId']}/clash-tests/arc-vs-str").json()["data"]
    assert saved["a"]["models"] == [a["id"]] and saved["b"]["models"] == [b["id"]] and saved["type"] == "hard"

    test.locator("[data-testid=coord-test-run]").click()
    page.locator("[data-testid=coord-run-status][data-status=done]").wait_for(timeout=120_000)
    assert "new 1" in page.locator("[data-testid=coord-run-summary]").inner_text()
    clash = page.locator("[data-testid=coord-clash]")
    clash.first.wait_for()  # listed once the run's clashes are loaded, after its summary
    assert clash.count() == 1
    clash_id = clash.get_attribute("data-clash-id")
    page.shot("clash-listed")

    clash.locator("button").click()
    page.locator("[data-testid=coord-clash-detail]").wait_for()
    page.wait_for_timeout(1000)  # the camera's flight
    state = page.evaluate("""() => {
      const view = viewerApp.view3d, scene = view.viewer.scene;
      return { visible: [...scene.visibleObjectIds].sort(), colours: [...scene.colorizedObjectIds].sort(), marked: Boolean(view.clashMarks),
               look: Array.from(view.viewer.camera.look) };
    }""")
    assert state["visible"] == sorted([a["guid"], b["guid"]])
    assert state["colours"] == sorted([a["guid"], b["guid"]])
    assert state["marked"]
    assert np.allclose(state["look"], [11, 1.5, -5.5], atol=0.5), state["look"]  # the pair's centre
    page.shot("clash-shown")

    detail = page.locator("[data-testid=coord-clash-detail]")
    detail.locator("[data-testid=coord-review-status]").select_option("reviewed")
    detail.locator("[data-testid=coord-assigned-to]").fill("struct-lead")
    detail.locator("[data-testid=coord-clash-save]").click()
    page.locator(".toast", has_text="Clash saved").wait_for()
    run_id = page.evaluate("viewerApp.loaded.coordination.run.runId")
    clashes = web_stack.api("GET", f"/api/v1/projects/{boxes['projectId']}/clash-tests/arc-vs-str/runs/{run_id}/clashes").json()["data"]
    assert [(c["clashId"], c["reviewStatus"], c["assignedTo"]) for c in clashes] == [(clash_id, "reviewed", "struct-lead")]
    assert "@struct-lead" in page.locator(f"[data-testid=coord-clash][data-clash-id={clash_id}]").inner_text()

    # grouped by storey: one group, its heading above the clash
    page.select_option("[data-testid=coord-group]", "storey")
    page.locator("[data-testid=coord-group-head]").wait_for()
    assert page.locator("[data-testid=coord-group-head]").count() == 1
    assert page.locator("[data-testid=coord-clash]").count() == 1
    page.select_option("[data-testid=coord-status-filter]", "resolved")
    page.locator("[data-testid=coord-clash]").wait_for(state="detached")
    page.select_option("[data-testid=coord-status-filter]", "")
    page.locator("[data-testid=coord-clash]").wait_for()

    # next wraps round the one clash; show all ends the clash view
    page.click("[data-testid=coord-next]")
    page.click("[data-testid=show-all]")
    assert page.evaluate("viewerApp.view3d.clashMarks") is None
    assert page.evaluate("viewerApp.view3d.viewer.scene.colorizedObjectIds.length") == 0


def test_every_text_of_the_coordination_tab_has_its_chinese():
    source = (ROOT / "frontend/src/i18n.js").read_text()
    table = source[source.index("const ZH = {"):source.index("\n};")]
    chinese = {json.loads(key) for key in re.findall(r'^\s*("(?:[^"\\]|\\.)*"):', table, re.MULTILINE)}
    code = (ROOT / "frontend/src/coordination.js").read_text()
    texts = {json.loads(text) for pattern in (r'\bt\(\s*("(?:[^"\\]|\\.)*")', r'\bi18n(?:Title|Placeholder)?:\s*("(?:[^"\\]|\\.)*")',
                                               r'\brightsHint\(\s*"\w+",\s*("(?:[^"\\]|\\.)*")') for text in re.findall(pattern, code)}
    texts |= {label for _, label in re.findall(r'\["([^"]*)", "([^"]+)"\]', code)}  # the groupings' labels
    for constant in ("TYPES", "STATUSES", "SUMMARY_KEYS", "PIN_KINDS"):
        texts |= set(json.loads(re.search(rf"const {constant} = (\[[^\]]*\]);", code).group(1)))
    texts |= {"Coordination", "reviewed", "approved", "not reviewed"}
    assert len(texts) > 60
    assert sorted(texts - chinese) == []


def test_a_run_s_clashes_are_pinned_as_issues_once(page, web_stack, boxes, clash_worker):
    if missing := route_missing("clash-run-issues"):
        pytest.skip(missing)
    project = boxes["projectId"]
    web_stack.api("PUT", f"/api/v1/projects/{project}/clash-tests/pinned", json={"a": {"models": [boxes["a"]["id"]]}, "b": {"models": [boxes["b"]["id"]]}})
    open_project(page, web_stack, project)
    page.click("[data-tab=coordination]")
    page.locator("[data-testid=coord-test][data-name=pinned] [data-testid=coord-test-run]").click()
    page.locator("[data-testid=coord-run-status][data-status=done]").wait_for(timeout=120_000)
    page.locator("[data-testid=coord-clash]").wait_for()
    page.click("[data-testid=coord-pin]")
    page.locator(".toast", has_text="created 1").wait_for()
    page.click("[data-testid=coord-pin]")
    page.locator(".toast", has_text="unchanged 1").wait_for()
    with page.expect_download() as download:
        page.click("[data-testid=coord-report]")
    assert download.value.suggested_filename.endswith(".bcfzip")


def test_a_model_of_a_project_opens_its_project_federated_from_the_tab(page, web_stack, boxes):
    page.goto(f"{web_stack.url}/#model={boxes['a']['id']}")
    wait_model_open(page)
    assert page.evaluate("viewerApp.view3d.federated") is None
    page.click("[data-tab=coordination]")
    page.locator("[data-testid=coord-project]", has_text="Project: Boxes").wait_for()
    assert page.locator("[data-testid=coord-model]").count() == 2
    page.click("[data-testid=coord-open-federation]")
    page.wait_for_function("viewerApp.view3d.federated && viewerApp.view3d.modelIds().length === 2")
    assert page.evaluate("window.location.hash") == f"#project={boxes['projectId']}"
    assert page.locator("[data-testid=model-title]").inner_text() == "Boxes"
    page.locator("[data-testid=coord-open-federation]").wait_for(state="hidden")


def test_pinning_more_clashes_than_the_threshold_asks_first(page, web_stack, clash_worker, tmp_path):
    """26 thin boxes (A's map conversion) inside B's box: 26 clashes; per clash, the server asks for confirm (40001):
    the tab asks the user with the count and the advice to pin per group; refused, nothing is pinned; agreed, all are."""
    if missing := route_missing("clash-run-issues"):
        pytest.skip(missing)
    thin = {**BOX_A, "corner": (10.02, 5.2, 0.5), "size": (0.03, 0.5, 0.5), "copies": 26, "step": (0.07, 0, 0)}
    many = boxed_project(web_stack, tmp_path, "Many boxes", thin, BOX_B)
    project = many["projectId"]
    web_stack.api("PUT", f"/api/v1/projects/{project}/clash-tests/many", json={"a": {"models": [many["a"]["id"]]}, "b": {"models": [many["b"]["id"]]}})
    open_project(page, web_stack, project)
    page.click("[data-tab=coordination]")
    page.locator("[data-testid=coord-test][data-name=many] [data-testid=coord-test-run]").click()
    page.locator("[data-testid=coord-run-status][data-status=done]").wait_for(timeout=120_000)
    assert "new 26" in page.locator("[data-testid=coord-run-summary]").inner_text()
    asked, answers = [], [False, True]  # the first question refused, the second agreed

    def answer(dialog):  # a standing handler: a click never waits on a question nobody answers
        asked.append(dialog.message)
        dialog.accept() if answers.pop(0) else dialog.dismiss()

    page.on("dialog", answer)
    page.click("[data-testid=coord-pin]")
    for _ in range(600):  # Playwright hands events over only while it is called: wait through it
        if asked:
            break
        page.wait_for_timeout(100)
    assert "26" in asked[0] and "per group" in asked[0], asked[0]
    page.wait_for_timeout(500)
    for key in ("a", "b"):
        assert web_stack.api("GET", f"/api/v1/models/{many[key]['id']}/issues").json()["data"] == []
    page.click("[data-testid=coord-pin]")
    page.locator(".toast", has_text="created 26").wait_for(timeout=120_000)  # 26 issues with viewpoints: slow on a loaded machine
    assert len(web_stack.api("GET", f"/api/v1/models/{many['a']['id']}/issues").json()["data"]) == 26
