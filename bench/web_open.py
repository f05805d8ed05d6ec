"""Opening a large model in the web client, against xeokit's own XKT loading of the same file, in the same run.

    .venv/bin/python bench/web_open.py [--storeys 160] [--bays 20] [--repeat 3]
    .venv/bin/python bench/web_open.py --smoke     # a 2-storey tower, opened once each way: seconds

Builds a tower (edit_service/examples/tower.py in the sandbox; the defaults give ~31 MB of IFC, ~26,000 elements),
uploads it to the real stack (gateway, a conversion worker, edit service) and waits for the conversion. Then, in
the system Chromium (headless, SwiftShader WebGL, fresh browser context = empty cache each time), alternating:

- client: the web client opened on the model (`/#model=<id>`): navigation start -> first frame drawn after the
  model loaded (`viewer:first-frame`) and -> the object tree built and clickable (`viewer:tree-ready`);
- anchor: a bare page on the same origin with only xeokit's Viewer + XKTLoaderPlugin (defaults) loading the same
  model.xkt + metadata.json: navigation start -> first frame after loading.

Also the client once more in a warm context (second visit: model files revalidated by ETag). Prints JSON with the
medians and the ratios to the anchor.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edit_service.engine.sandbox import Sandbox, SandboxLimits  # noqa: E402
from edit_service.engine.scripts import read_params  # noqa: E402
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.e2e.stack import Stack  # noqa: E402

BARE_JS = """
import { Viewer, XKTLoaderPlugin } from "@xeokit/xeokit-sdk";
const viewer = new Viewer({ canvasId: "canvas", transparent: false, dtxEnabled: true });
const id = new URLSearchParams(location.search).get("model");
const model = new XKTLoaderPlugin(viewer).load({ id, src: `/v1/models/${id}/model.xkt`, metaModelSrc: `/v1/models/${id}/metadata.json`, edges: true });
model.on("loaded", () => {
  performance.mark("viewer:model-loaded");
  viewer.cameraFlight.jumpTo({ aabb: viewer.scene.getAABB(), fit: true });
  viewer.scene.once("rendered", () => performance.mark("viewer:first-frame"));
});
"""
BARE_HTML = """<!doctype html><html><head><meta charset="utf-8"><style>html,body,canvas{margin:0;width:100%;height:100%}</style>
<script type="module" src="/__bench/bare.js"></script></head><body><canvas id="canvas"></canvas></body></html>"""
MARK_JS = "(name) => { const mark = performance.getEntriesByName(name)[0]; return mark ? mark.startTime : null; }"
# where the time goes: the model file's download (request start, response end) and the end of parsing it
PHASES_JS = """() => {
  const xkt = performance.getEntriesByType("resource").find((e) => e.name.includes("model.xkt"));
  const loaded = performance.getEntriesByName("viewer:model-loaded")[0];
  return { xktRequestMs: Math.round(xkt.startTime), xktDoneMs: Math.round(xkt.responseEnd), modelLoadedMs: Math.round(loaded.startTime) };
}"""


def build_tower(folder: Path, storeys: int, bays: int) -> Path:
    script = (ROOT / "edit_service" / "examples" / "tower.py").read_text()
    params = {**read_params(script), "storeys": storeys, "bays_x": bays, "bays_y": bays}
    ifc, _, _ = Sandbox(SandboxLimits(wall_seconds=900, cpu_seconds=900, memory_mb=4096)).build(script, params, folder)
    return ifc


def bundle_bare_page(folder: Path) -> Path:
    entry = folder / "bare-entry.js"
    entry.write_text(BARE_JS)
    out = folder / "bare.js"
    subprocess.run(["node", "-e", f"""
      require("esbuild").buildSync({{ entryPoints: [{json.dumps(str(entry))}], bundle: true, format: "esm", minify: true,
        outfile: {json.dumps(str(out))}, external: ["fs", "path"], nodePaths: [{json.dumps(str(ROOT / "frontend" / "node_modules"))}], logLevel: "warning" }});
    """], cwd=ROOT / "frontend", check=True)
    return out


def wait_mark(page, name: str, timeout_s: float = 600) -> float:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = page.evaluate(MARK_JS, name)
        if value is not None:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"{name} not reached in {timeout_s} s")


def open_client(browser, url: str, model_id: str, context=None) -> tuple[dict, object]:
    context = context or browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(f"{url}/#model={model_id}")
    first = wait_mark(page, "viewer:first-frame")
    tree = wait_mark(page, "viewer:tree-ready")
    page.locator("[data-testid=tree-containment] li span").first.click()  # the tree answers
    phases = page.evaluate(PHASES_JS)
    page.close()
    return {"firstFrameMs": round(first), "treeMs": round(tree), **phases}, context


def open_bare(browser, url: str, model_id: str, bare_js: bytes) -> float:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.route(f"{url}/__bench/bare.html*", lambda route: route.fulfill(body=BARE_HTML, content_type="text/html"))
    page.route(f"{url}/__bench/bare.js", lambda route: route.fulfill(body=bare_js, content_type="text/javascript"))
    page.goto(f"{url}/__bench/bare.html?model={model_id}")
    first = wait_mark(page, "viewer:first-frame")
    phases = page.evaluate(PHASES_JS)
    context.close()
    return {"firstFrameMs": round(first), **phases}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--storeys", type=int, default=160)
    parser.add_argument("--bays", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="a 2-storey tower, opened once each way")
    args = parser.parse_args()
    if args.smoke:
        args.storeys, args.bays, args.repeat = 2, 2, 1
    if not Path(CHROMIUM).exists() or not shutil.which("node"):
        sys.exit("needs Debian's chromium and node")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        ifc = build_tower(folder, args.storeys, args.bays)
        built_s = time.perf_counter() - started
        bare_js = bundle_bare_page(folder).read_bytes()
        ifc_mb = round(ifc.stat().st_size / 1e6, 1)
        (folder / "stack").mkdir()
        stack = Stack(folder / "stack", workers=1).start()
        try:
            with open(ifc, "rb") as handle:
                model_id = stack.api("POST", "/api/v1/models", files={"file": ("tower.ifc", handle)}).json()["data"]["id"]
            started = time.perf_counter()
            model = stack.wait_model(model_id, timeout=1800)
            converted_s = time.perf_counter() - started
            assert model["status"] == "ready", model
            sizes = {name: stack.api("GET", f"/v1/models/{model_id}/{name}").headers["Content-Length"] for name in ("model.xkt", "metadata.json")}
            clients, anchors, warm = [], [], []
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                open_bare(browser, stack.url, model_id, bare_js)  # warm-up: the browser, the OS page cache
                for _ in range(args.repeat):
                    anchors.append(open_bare(browser, stack.url, model_id, bare_js))
                    result, context = open_client(browser, stack.url, model_id)
                    clients.append(result)
                    again, _ = open_client(browser, stack.url, model_id, context)
                    warm.append(again)
                    context.close()
                browser.close()
        finally:
            stack.stop()
    anchor = statistics.median(a["firstFrameMs"] for a in anchors)
    first = statistics.median(c["firstFrameMs"] for c in clients)
    tree = statistics.median(c["treeMs"] for c in clients)
    print(json.dumps({
        "model": {"storeys": args.storeys, "bays": args.bays, "ifcMB": ifc_mb,
                  "xktMB": round(int(sizes["model.xkt"]) / 1e6, 1), "metadataMB": round(int(sizes["metadata.json"]) / 1e6, 1),
                  "buildSeconds": round(built_s, 1), "conversionSeconds": round(converted_s, 1)},
        "anchorBareXeokitFirstFrameMs": round(anchor),
        "clientFirstFrameMs": round(first), "clientInteractiveTreeMs": round(tree),
        "clientWarmFirstFrameMs": round(statistics.median(c["firstFrameMs"] for c in warm)),
        "firstFrameRatioToAnchor": round(first / anchor, 2), "treeRatioToAnchor": round(tree / anchor, 2),
        "runs": {"anchor": anchors, "client": clients, "clientWarm": warm},
    }, indent=2))


if __name__ == "__main__":
    main()
