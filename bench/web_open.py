"""Opening a large model in the web client, against xeokit's own XKT loading of the same file, in the same run.

    .venv/bin/python bench/web_open.py [--storeys 160] [--bays 20] [--repeat 3]
    .venv/bin/python bench/web_open.py --sample largest [--repeat 5]   # the largest file of the shared IFC samples
    .venv/bin/python bench/web_open.py --smoke     # a 2-storey tower, opened once each way: seconds

Builds a tower (edit_service/examples/tower.py in the sandbox; the defaults give ~31 MB of IFC, ~26,000 elements),
or takes an IFC file (--sample FILE, or `largest`: the largest .ifc of the shared samples, ../shared/ifc-samples or
$VIEWER_SAMPLES_DIR), uploads it to the real stack (gateway, a conversion worker, edit service) and waits for the
conversion. Then, in the system Chromium (headless, SwiftShader WebGL, fresh browser context = empty cache each
time), alternating:

- client: the web client opened on the model (`/#model=<id>`): navigation start -> first frame drawn after the
  model loaded (`viewer:first-frame`) and -> the object tree built and clickable (`viewer:tree-ready`);
- anchor: a bare page on the same origin with only xeokit's Viewer + XKTLoaderPlugin (defaults) loading the same
  model.xkt + metadata.json: navigation start -> first frame after loading.

Each opening starts once the browser is idle (its processes under 5% of a core in three half seconds in a row, one
in a smoke run; the wait is printed as idleWaitS): what a closed page left drawing is not billed to the next. Also the client once more in a
warm context (second visit: model files revalidated by ETag). Prints JSON with the medians and the ratios to the
anchor. Then one more cold run of each way under Chromium's tracing (not counted in
the figures: the sampling profiler slows the page), written as Chrome trace JSON (open it in chrome://tracing or
DevTools' Performance panel) into --trace-dir, `web-open-<model>-{client,bare}.json`, and summarised in the JSON
("trace"): per way, the main thread's long tasks up to the first frame and the functions that took its time.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edit_service.engine.sandbox import Sandbox, SandboxLimits  # noqa: E402
from edit_service.engine.scripts import read_params  # noqa: E402
from tests.browser.conftest import CHROMIUM, USER_CHROMIUM_ARGS  # noqa: E402
from tests.e2e.stack import Stack  # noqa: E402
from tests.helpers import SAMPLES_DIR  # noqa: E402

TRACE_DIR = ROOT / "bench" / "results" / "web-open"  # git-ignored
# "v8": the scripts' parsing and compiling, also on background threads (streamed scripts)
TRACE_CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "blink.user_timing", "toplevel",
                    "v8", "v8.execute", "disabled-by-default-v8.cpu_profiler"]

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
  const file = (name) => performance.getEntriesByType("resource").find((e) => e.name.includes(name));
  const [xkt, meta] = [file("model.xkt"), file("metadata.json")];
  const loaded = performance.getEntriesByName("viewer:model-loaded")[0];
  return { xktRequestMs: Math.round(xkt.startTime), xktDoneMs: Math.round(xkt.responseEnd), metadataRequestMs: Math.round(meta.startTime),
           metadataDoneMs: Math.round(meta.responseEnd), modelLoadedMs: Math.round(loaded.startTime) };
}"""


def build_tower(folder: Path, storeys: int, bays: int) -> Path:
    script = (ROOT / "edit_service" / "examples" / "tower.py").read_text()
    params = {**read_params(script), "storeys": storeys, "bays_x": bays, "bays_y": bays}
    ifc, _, _ = Sandbox(SandboxLimits(wall_seconds=900, cpu_seconds=900, memory_mb=4096)).build(script, params, folder)
    return ifc


def largest_sample() -> Path:
    return max(SAMPLES_DIR.glob("*.ifc"), key=lambda path: path.stat().st_size)


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


def chromium_cpu_s() -> dict[int, float]:
    """Processor time so far of each of this run's Chromium processes (the browser's tree under Playwright's driver)."""
    times = {}
    for process in psutil.Process().children(recursive=True):
        try:
            if "chrom" in process.name():
                cpu = process.cpu_times()
                times[process.pid] = cpu.user + cpu.system
        except psutil.Error:
            pass
    return times


def wait_browser_idle(window_s: float = 0.5, quiet_windows: int = 3, busy_share: float = 0.05, timeout_s: float = 60) -> float:
    """Waits until Chromium's processes together have used under `busy_share` of a core in each of `quiet_windows`
    windows of `window_s` in a row; the seconds waited. A page closed at its first frame leaves the GPU process
    drawing that frame (SwiftShader: ~2 s of processor time for the tower here) and the context's teardown waiting
    for it, in stages (one quiet half second was seen followed by more of it); without this wait that work fell into
    the next measured opening, which then started its script up to 2.7 s late."""
    started = time.monotonic()
    before, quiet = chromium_cpu_s(), 0
    while quiet < quiet_windows and time.monotonic() - started < timeout_s:
        time.sleep(window_s)
        now = chromium_cpu_s()
        busy = sum(max(0.0, cpu - before.get(pid, 0.0)) for pid, cpu in now.items()) >= busy_share * window_s
        quiet = 0 if busy else quiet + 1
        before = now
    return round(time.monotonic() - started, 2)


def open_client(browser, url: str, model_id: str, context=None, trace: Path | None = None, idle_windows: int = 3) -> tuple[dict, object]:
    idle_s = wait_browser_idle(quiet_windows=idle_windows)
    context = context or browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    if trace:
        browser.start_tracing(page=page, path=str(trace), categories=TRACE_CATEGORIES)
    page.goto(f"{url}/#model={model_id}")
    first = wait_mark(page, "viewer:first-frame")
    tree = wait_mark(page, "viewer:tree-ready")
    page.locator("[data-testid=tree-containment] li span").first.click()  # the tree answers
    if trace:
        browser.stop_tracing()
    phases = page.evaluate(PHASES_JS)
    page.close()
    return {"firstFrameMs": round(first), "treeMs": round(tree), **phases, "idleWaitS": idle_s}, context


def open_bare(browser, url: str, model_id: str, bare_js: bytes, trace: Path | None = None, idle_windows: int = 3) -> dict:
    idle_s = wait_browser_idle(quiet_windows=idle_windows)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.route(f"{url}/__bench/bare.html*", lambda route: route.fulfill(body=BARE_HTML, content_type="text/html"))
    page.route(f"{url}/__bench/bare.js", lambda route: route.fulfill(body=bare_js, content_type="text/javascript"))
    if trace:
        browser.start_tracing(page=page, path=str(trace), categories=TRACE_CATEGORIES)
    page.goto(f"{url}/__bench/bare.html?model={model_id}")
    first = wait_mark(page, "viewer:first-frame")
    if trace:
        browser.stop_tracing()
    phases = page.evaluate(PHASES_JS)
    context.close()
    return {"firstFrameMs": round(first), **phases, "idleWaitS": idle_s}


# --- the trace's summary ----------------------------------------------------------------------------------------

# what a long task of the main thread mostly did: its longest event of these kinds (with the script or function)
TASK_KINDS = {"EvaluateScript", "v8.evaluateModule", "FunctionCall", "XHRLoad", "XHRReadyStateChange", "FireAnimationFrame",
              "TimerFire", "EventDispatch", "RunMicrotasks", "ParseHTML", "v8.compileModule", "MajorGC", "MinorGC",
              "ResourceReceivedData", "Layout", "UpdateLayoutTree", "Paint"}


def navigation_start(events: list, main: list, mark: dict) -> int:
    """The trace time the page's navigation started: its main thread's navigationStart; when that renderer came up
    after the mark was emitted elsewhere (Chromium may swap processes on navigation) any navigationStart before the
    mark; failing both, the main thread's first event."""
    for candidates in (main, events):
        starts = [e["ts"] for e in candidates if e.get("name") == "navigationStart" and 0 < e.get("ts", 0) <= mark["ts"]]
        if starts:
            return max(starts)
    return min(e["ts"] for e in main if e.get("ts", 0) > 0)


def summarise_trace(path: Path, until_mark: str = "viewer:first-frame", top: int = 15) -> dict:
    """The page's main thread from navigation start to `until_mark`: its busy time, its long tasks (>= 30 ms, with
    what each mostly did) and the JS functions with the most self time (the sampling profiler's samples)."""
    events = json.loads(path.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    mark = next(e for e in events if e.get("name") == until_mark and "user_timing" in e.get("cat", ""))
    pid, tid = mark["pid"], mark["tid"]
    main = [e for e in events if e.get("pid") == pid and e.get("tid") == tid]
    start = navigation_start(events, main, mark)
    end = mark["ts"]
    ms = lambda us: round(us / 1000)  # noqa: E731
    tasks = sorted((e for e in main if e.get("name") == "RunTask" and e.get("ph") == "X" and start <= e["ts"] <= end), key=lambda e: e["ts"])
    long_tasks = []
    for task in (t for t in tasks if t.get("dur", 0) >= 30_000):
        inside = [e for e in main if e.get("name") in TASK_KINDS and e.get("ph") == "X" and task["ts"] <= e["ts"] <= task["ts"] + task["dur"]]
        what = max(inside, key=lambda e: e.get("dur", 0), default={"name": "?", "args": {}})
        data = (what.get("args") or {}).get("data") or {}
        detail = data.get("functionName") or data.get("url") or data.get("type") or ""
        long_tasks.append({"atMs": ms(task["ts"] - start), "ms": ms(task["dur"]), "what": f"{what['name']} {detail.rsplit('/', 1)[-1]}".strip()})
    return {"untilMs": ms(end - start), "mainThreadBusyMs": ms(sum(t.get("dur", 0) for t in tasks)), "longTasks": long_tasks,
            "selfTimeMs": profile_self_times(events, pid, tid, start, end, top)}


BASE64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}


@functools.cache
def source_map(path: Path) -> tuple[list, list]:
    """A source map's sources and, per generated line, its segments [(column, source, line)] (the VLQ mappings)."""
    data = json.loads(path.read_text())
    lines, source, line = [], 0, 0
    for text in data["mappings"].split(";"):
        column, segments = 0, []
        for segment in filter(None, text.split(",")):
            fields, value, shift = [], 0, 0
            for char in segment:
                digit = BASE64[char]
                value += (digit & 31) << shift
                shift = shift + 5 if digit & 32 else 0
                if not digit & 32:
                    fields.append(-(value >> 1) if value & 1 else value >> 1)
                    value = 0
            column += fields[0]
            if len(fields) >= 4:
                source, line = source + fields[1], line + fields[2]
                segments.append((column, source, line))
        lines.append(segments)
    return data["sources"], lines


def source_of(frame: dict) -> str:
    """file:line of a profiled function: in the original sources for the web client's chunks (their source maps in
    frontend/dist), else in the script as served."""
    url, line, column = frame.get("url", ""), frame.get("lineNumber", -1), frame.get("columnNumber", -1)
    served = ROOT / "frontend" / "dist" / url.partition("/static/viewer/")[2]
    if "/static/viewer/" in url and served.with_name(served.name + ".map").exists():
        sources, lines = source_map(served.with_name(served.name + ".map"))
        before = [segment for segment in lines[line] if segment[0] <= column] if 0 <= line < len(lines) else []
        if before:
            return f"{sources[before[-1][1]].rsplit('/', 1)[-1]}:{before[-1][2] + 1}"
    return f"{url.rsplit('/', 1)[-1]}:{line + 1}"


def profile_self_times(events: list, pid: int, tid: int, start: int, end: int, top: int) -> list:
    """The sampling profiler's self time per function (name, script, line) between start and end (trace µs)."""
    profile = next((e for e in events if e.get("name") == "Profile" and e.get("pid") == pid and e.get("tid") == tid), None)
    if not profile:
        return []
    nodes, samples, deltas = {}, [], []
    for chunk in (e for e in events if e.get("name") == "ProfileChunk" and e.get("id") == profile["id"] and e.get("pid") == pid):
        data = chunk["args"]["data"]
        for node in data.get("cpuProfile", {}).get("nodes", []):
            frame = node["callFrame"]
            nodes[node["id"]] = f"{frame.get('functionName') or '(anonymous)'} {source_of(frame)}".strip()
        samples += data.get("cpuProfile", {}).get("samples", [])
        deltas += data.get("timeDeltas", [])
    totals: dict[str, float] = {}
    now = profile["args"]["data"]["startTime"]
    for i, node in enumerate(samples):
        now += deltas[i]
        spent = deltas[i + 1] if i + 1 < len(deltas) else 0
        if start <= now <= end:
            name = nodes.get(node, "?")
            totals[name] = totals.get(name, 0) + spent
    ranked = sorted(totals.items(), key=lambda item: -item[1])[:top]
    return [{"function": name, "ms": round(us / 1000)} for name, us in ranked]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--storeys", type=int, default=160)
    parser.add_argument("--bays", type=int, default=20)
    parser.add_argument("--sample", help="an IFC file to open instead of the tower, or `largest` (of the shared samples)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trace-dir", type=Path, default=TRACE_DIR, help=f"where the traces go (default: {TRACE_DIR.relative_to(ROOT)})")
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
        ifc = (largest_sample() if args.sample == "largest" else Path(args.sample)) if args.sample else build_tower(folder, args.storeys, args.bays)
        built_s = time.perf_counter() - started
        name = ifc.stem if args.sample else f"tower-{args.storeys}x{args.bays}"
        bare_js = bundle_bare_page(folder).read_bytes()
        ifc_mb = round(ifc.stat().st_size / 1e6, 1)
        (folder / "stack").mkdir()
        stack = Stack(folder / "stack", workers=1).start()
        try:
            with open(ifc, "rb") as handle:
                model_id = stack.api("POST", "/api/v1/models", files={"file": (ifc.name, handle)}).json()["data"]["id"]
            started = time.perf_counter()
            model = stack.wait_model(model_id, timeout=1800)
            converted_s = time.perf_counter() - started
            assert model["status"] == "ready", model
            sizes = {name: stack.api("GET", f"/v1/models/{model_id}/{name}").headers["Content-Length"] for name in ("model.xkt", "metadata.json")}
            clients, anchors, warm = [], [], []
            trace_dir = folder / "traces" if args.smoke else args.trace_dir  # a smoke run writes nothing under bench/results/
            trace_dir.mkdir(parents=True, exist_ok=True)
            traces = {way: trace_dir / f"web-open-{name}-{way}.json" for way in ("client", "bare")}
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=USER_CHROMIUM_ARGS)  # composited on the GPU process, as a user's browser; not the tests' software compositing
                idle = {"idle_windows": 1 if args.smoke else 3}  # a smoke run's figures are not read: one quiet window
                open_bare(browser, stack.url, model_id, bare_js, **idle)  # warm-up: the browser, the OS page cache
                for _ in range(args.repeat):
                    anchors.append(open_bare(browser, stack.url, model_id, bare_js, **idle))
                    result, context = open_client(browser, stack.url, model_id, **idle)
                    clients.append(result)
                    again, _ = open_client(browser, stack.url, model_id, context, **idle)
                    warm.append(again)
                    context.close()
                open_bare(browser, stack.url, model_id, bare_js, trace=traces["bare"], **idle)
                open_client(browser, stack.url, model_id, trace=traces["client"], **idle)[1].close()
                browser.close()
            trace_summaries = {way: {"file": str(path), **summarise_trace(path)} for way, path in traces.items()}
        finally:
            stack.stop()
    median = lambda runs, key: statistics.median(run[key] for run in runs)  # noqa: E731
    anchor = median(anchors, "firstFrameMs")
    first, tree, warm_first = median(clients, "firstFrameMs"), median(clients, "treeMs"), median(warm, "firstFrameMs")
    print(json.dumps({
        "model": {"name": name, **({} if args.sample else {"storeys": args.storeys, "bays": args.bays}), "ifcMB": ifc_mb,
                  "xktMB": round(int(sizes["model.xkt"]) / 1e6, 1), "metadataMB": round(int(sizes["metadata.json"]) / 1e6, 1),
                  "buildSeconds": round(built_s, 1), "conversionSeconds": round(converted_s, 1)},
        "anchorBareXeokitFirstFrameMs": round(anchor),
        "clientFirstFrameMs": round(first), "clientInteractiveTreeMs": round(tree),
        "clientWarmFirstFrameMs": round(warm_first), "clientWarmInteractiveTreeMs": round(median(warm, "treeMs")),
        "firstFrameRatioToAnchor": round(first / anchor, 2), "treeRatioToAnchor": round(tree / anchor, 2),
        "warmFirstFrameRatioToAnchor": round(warm_first / anchor, 2),
        "medians": {way: {key: round(median(runs, key), 2 if key == "idleWaitS" else None) for key in runs[0]} for way, runs in (("anchor", anchors), ("client", clients), ("clientWarm", warm))},
        "runs": {"anchor": anchors, "client": clients, "clientWarm": warm},
        "trace": trace_summaries,
    }, indent=2))


if __name__ == "__main__":
    main()
