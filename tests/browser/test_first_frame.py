"""The web client's first frame (issue 36): it does not wait for what the picture does not need.

- A project's federated view (#project=p_...) draws its first frame once its FIRST model is parsed: the second
  model's files are held back by the test (its metadata.json, which xeokit's loader asks for first, at once for every
  model) until that frame is marked, so a view that waited for all of its models would never get there; released,
  the second model loads after the first frame (performance marks).
- A model in the address (#model=m_...) is downloaded by the page's entry, and only once: the 3D view takes that
  download instead of requesting the files again. The chunks the entry loads at once are named by the page as
  module preloads, fetched beside the entry instead of one after another, each once.
- A model in the address that is still converting opens by itself once it is ready, with its new files.
- No WebGL context is left for the garbage collector to destroy (that waited for the GPU after the first frame).
- The first frame is drawn without the models' edges (their shader programs took most of that frame's time; their
  state is read as the frame is marked); a model opened alone, and a project's models, show them from the next frame
  on.
"""

import pytest

from tests.browser.conftest import upload_ready, wait_model_open
from tests.helpers import sample

pytestmark = pytest.mark.e2e

MARK_JS = "(name) => { const mark = performance.getEntriesByName(name)[0]; return mark ? mark.startTime : null; }"


def marked(name: str) -> str:
    return f"performance.getEntriesByName('{name}').length > 0"


# the models' edges as they were when the first frame was marked (in that frame's "rendered" handler, before it turns
# them on): {model id: edges}
EDGES_AT_FIRST_FRAME_JS = """
const mark = performance.mark.bind(performance);
performance.mark = (name, ...rest) => {
  if (name === "viewer:first-frame") window.edgesAtFirstFrame = Object.fromEntries(
    Object.entries(viewerApp.view3d.viewer.scene.models).map(([id, model]) => [id, model.edges]));
  return mark(name, ...rest);
};
"""


@pytest.fixture(scope="module")
def two_model_project(web_stack):
    """A project of a small model (IfcOpenHouse) and the largest sample (AC20-FZK-Haus), neither georeferenced (both
    at the project origin)."""
    project = web_stack.api("POST", "/api/v1/chat/projects", json={"title": "Two houses", "kind": "ifc", "skeleton": False}).json()["data"]
    ids = {}
    for key, name, discipline in (("small", "IfcOpenHouse_IFC4.ifc", "ARC"), ("large", "AC20-FZK-Haus.ifc", "STR")):
        with open(sample(name), "rb") as handle:
            answer = web_stack.api("POST", "/api/v1/models", files={"file": (name, handle)},
                                   data={"projectId": project["projectId"], "discipline": discipline}).json()
        assert answer["code"] == 0, answer
        assert web_stack.wait_model(answer["data"]["id"])["status"] == "ready"
        ids[key] = answer["data"]["id"]
    return {"projectId": project["projectId"], **ids}


def test_a_project_shows_its_first_model_before_the_second_is_loaded(page, web_stack, two_model_project):
    small, large = two_model_project["small"], two_model_project["large"]
    held = []
    page.route(f"**/v1/models/{large}/metadata.json", lambda route: held.append(route))  # answered once the first frame is there
    page.add_init_script(EDGES_AT_FIRST_FRAME_JS)
    page.goto(f"{web_stack.url}/#project={two_model_project['projectId']}")
    page.wait_for_function(f"{marked('viewer:first-frame')} && {marked(f'viewer:model-loaded:{small}')}", timeout=120_000)
    assert len(held) == 1, "the second model's files were asked for"
    assert page.evaluate(MARK_JS, f"viewer:model-loaded:{large}") is None
    edges_at_first_frame = page.evaluate("window.edgesAtFirstFrame")
    assert edges_at_first_frame[small] is False and not any(edges_at_first_frame.values()), edges_at_first_frame
    # the first model is on screen, framed: its centre projects into the canvas
    assert page.evaluate("""(id) => {
      const viewer = viewerApp.view3d.viewer, aabb = viewer.scene.models[id].aabb;
      const [x, y] = viewer.camera.projectWorldPos([(aabb[0] + aabb[3]) / 2, (aabb[1] + aabb[4]) / 2, (aabb[2] + aabb[5]) / 2]);
      const [, , width, height] = viewer.scene.canvas.boundary;
      return x > 0 && x < width && y > 0 && y < height;
    }""", small)
    page.shot("first-model")

    held[0].continue_()
    page.wait_for_function(marked(f"viewer:model-loaded:{large}"), timeout=120_000)
    wait_model_open(page)
    first_frame = page.evaluate(MARK_JS, "viewer:first-frame")
    assert first_frame < page.evaluate(MARK_JS, f"viewer:model-loaded:{large}")
    assert first_frame < page.evaluate(MARK_JS, "viewer:model-loaded")  # all of the project's models
    assert sorted(page.evaluate("viewerApp.view3d.modelIds()")) == sorted([small, large])
    # then the camera takes in both models (it was not moved meanwhile): it looks at the centre of both, not of the first
    centres = page.evaluate("""(id) => {
      const scene = viewerApp.view3d.viewer.scene, centre = (b) => [0, 1, 2].map((i) => (b[i] + b[i + 3]) / 2);
      return { look: Array.from(viewerApp.view3d.viewer.camera.look), both: centre(scene.getAABB()), first: centre(scene.models[id].aabb) };
    }""", small)
    assert centres["look"] == pytest.approx(centres["both"], abs=1e-3)
    assert centres["both"] != pytest.approx(centres["first"], abs=0.1)
    page.locator("[data-testid=tree-containment] li span", has_text="STR").wait_for()
    # both models show their edges: the second, loaded after the first frame, too
    page.wait_for_function("(ids) => ids.every((id) => viewerApp.view3d.viewer.scene.models[id].edges === true)", arg=[small, large], timeout=30_000)
    page.shot("both-models")


def test_the_model_in_the_address_is_downloaded_once_from_the_page_s_entry(page, web_stack):
    model_id = upload_ready(web_stack, sample("IfcOpenHouse_IFC4.ifc"))
    initiators = []  # (URL, who asked for it: the HTML parser, or the script at the top of the stack)
    devtools = page.context.new_cdp_session(page.page)
    devtools.on("Network.requestWillBeSent", lambda sent: initiators.append((sent["request"]["url"], initiator(sent["initiator"]))))
    devtools.send("Network.enable")
    page.goto(f"{web_stack.url}/#model={model_id}")
    wait_model_open(page)
    files = [(url, by) for url, by in initiators if url.startswith(f"{web_stack.url}/v1/models/{model_id}/")]  # not /api/v1/...
    entry = f"{web_stack.url}/static/viewer/app.js"
    assert sorted(files) == [(f"{web_stack.url}/v1/models/{model_id}/{name}", entry) for name in ("metadata.json", "model.xkt")], files
    # the chunks app.js loads at once are named by the page (modulepreload): fetched beside app.js, each once
    preloads = page.evaluate("[...document.querySelectorAll('link[rel=modulepreload]')].map((link) => link.href)")
    assert any("/chunks/main-" in url for url in preloads) and len(preloads) >= 2, preloads
    chunks = [(url, by) for url, by in initiators if url in preloads]
    assert sorted(chunks) == sorted((url, "parser") for url in preloads), initiators
    assert page.evaluate(MARK_JS, "viewer:first-frame") is not None


def initiator(sent: dict) -> str:
    if sent["type"] == "parser":
        return "parser"
    frames = sent.get("stack", {}).get("callFrames") or [{"url": sent.get("url", "?")}]
    return frames[0]["url"].split("?")[0]


# every size change of the 3D view's canvas, from the page's start: xeokit clears the canvas and draws the whole model
# again on each one (seconds for a large model without a hardware GPU)
CANVAS_RESIZES_JS = """document.addEventListener("DOMContentLoaded", () => {
  window.canvasResizes = [];
  new ResizeObserver(() => window.canvasResizes.push(performance.now())).observe(document.getElementById("view3d"));
});"""


def test_the_3d_view_keeps_its_size_once_the_model_is_drawn(page, web_stack):
    """The bar above the view changes as the model opens (its title, the on-screen badge): the view must not be
    resized by it, not even by a fraction of a pixel."""
    model_id = upload_ready(web_stack, sample("AC20-FZK-Haus.ifc"))
    page.add_init_script(CANVAS_RESIZES_JS)
    page.goto(f"{web_stack.url}/#model={model_id}")
    wait_model_open(page)
    page.wait_for_function(marked("viewer:tree-ready"), timeout=120_000)
    page.wait_for_timeout(1500)  # the bar's last changes come after the tree
    first_frame = page.evaluate(MARK_JS, "viewer:first-frame")
    resizes = page.evaluate("window.canvasResizes")
    assert resizes, "the observer saw the canvas laid out"
    assert [at for at in resizes if at > first_frame] == [], f"resized after the first frame ({first_frame:.0f} ms): {resizes}"


# every WebGL context the page makes, with its canvas
WEBGL_CONTEXTS_JS = """window.webglContexts = [];
const getContext = HTMLCanvasElement.prototype.getContext;
HTMLCanvasElement.prototype.getContext = function (type, ...options) {
  const context = getContext.call(this, type, ...options);
  if (context && /webgl/.test(type)) window.webglContexts.push([this, context]);
  return context;
};"""


def test_no_webgl_context_is_left_for_the_garbage_collector(page, web_stack):
    """A WebGL context on a canvas that is not on the page is lost at once (xeokit's probe of WebGL, WEBGL_INFO, and any
    other): destroying one that the garbage collector finalizes waits for the GPU process to finish everything queued,
    which froze the page for 1.3-1.5 s after a large model's first frame (frontend/build.mjs)."""
    model_id = upload_ready(web_stack, sample("IfcOpenHouse_IFC4.ifc"))
    page.add_init_script(WEBGL_CONTEXTS_JS)
    page.goto(f"{web_stack.url}/#model={model_id}")
    wait_model_open(page)
    page.wait_for_function(marked("viewer:tree-ready"), timeout=120_000)
    contexts = page.evaluate("""window.webglContexts.map(([canvas, context]) =>
      ({ id: canvas.id, onPage: canvas.isConnected, lost: context.isContextLost() }))""")
    assert {"id": "view3d", "onPage": True, "lost": False} in contexts  # the 3D view's own
    assert [c for c in contexts if not c["onPage"]], "xeokit's probe made a context on a canvas off the page"
    assert [c for c in contexts if not c["onPage"] and not c["lost"]] == [], contexts


def test_a_model_in_the_address_that_is_converting_opens_once_it_is_ready(page, web_stack):
    """A reload or a link while the model converts (a save's new product, a new revision): the page says so and
    opens the model when the list reports it ready, without a click, with the new product's files, not the ones the
    page's entry started downloading. The list's first two answers are made to say "converting" (the list polls
    every 2 s while a model converts), the third is the server's own; the entry's download of the metadata is held
    until the page says the model converts (so the early model.xkt is still unused then)."""
    model_id = upload_ready(web_stack, sample("IfcOpenHouse_IFC4.ifc"))
    answers = []

    def converting_at_first(route, request):
        response = route.fetch()
        models = response.json()
        if request.method == "GET" and len(answers) < 2:
            for model in models["data"]:
                if model["id"] == model_id:
                    model["status"] = "converting"
        answers.append([m["status"] for m in models["data"] if m["id"] == model_id])
        route.fulfill(response=response, json=models)

    page.route("**/api/v1/models", converting_at_first)
    held = []  # the page entry's early download of the metadata, answered once the page says the model converts
    page.route(f"**/v1/models/{model_id}/metadata.json", lambda route: held.append(route) if not held else route.continue_())
    geometry_requests = []
    page.on("request", lambda request: geometry_requests.append(request.url) if request.url.endswith(f"/v1/models/{model_id}/model.xkt") else None)
    page.goto(f"{web_stack.url}/#model={model_id}")
    page.locator("[data-testid=stage-state]", has_text="Converting the model").wait_for()
    held[0].continue_()
    wait_model_open(page)
    assert answers[:3] == [["converting"], ["converting"], ["ready"]], answers
    # what the page's entry downloaded was the product being replaced: the new one is requested once it is ready
    assert len(geometry_requests) == 2, geometry_requests
    assert page.evaluate(MARK_JS, f"viewer:model-loaded:{model_id}") is not None
    assert page.locator("#model-title").text_content() == "IfcOpenHouse_IFC4.ifc"


def test_a_model_opened_alone_shows_its_edges_from_the_frame_after_its_first(page, web_stack, two_model_project):
    large = two_model_project["large"]
    page.add_init_script(EDGES_AT_FIRST_FRAME_JS)
    page.goto(f"{web_stack.url}/#model={large}")
    page.wait_for_function(marked("viewer:first-frame"), timeout=120_000)
    assert page.evaluate("window.edgesAtFirstFrame") == {large: False}
    page.wait_for_function("(id) => viewerApp.view3d.viewer.scene.models[id].edges === true", arg=large, timeout=30_000)
    assert page.evaluate("(id) => viewerApp.view3d.viewer.scene.models[id].numEdgesLayerPortions", large) > 0
    page.shot("edges")
