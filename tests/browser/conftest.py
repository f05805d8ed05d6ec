"""The web client in a real headless Chromium (Debian's package, driven by Playwright), against the real processes.
Screenshots of every step go to test-artifacts/browser/ (not committed)."""

import os
import shutil
from pathlib import Path

import pytest

from tests.e2e.stack import ROOT, running_stack

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
# Software WebGL (SwiftShader) and the flags for a machine without a display or network: Chromium otherwise as a
# user's browser runs it (bench/web_open.py measures with these).
USER_CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--disable-quic",
    "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
# The tests' page is composited in software: WebGL still draws through SwiftShader, but the frames xeokit's endless
# requestAnimationFrame loop asks for are no longer composed through it too (an idle page: a fifth of a core -> an
# eighth; opening a model: 2.2 -> 1.6 s of processor time). Each frame's commit then waits for a readback of the
# WebGL canvas, which a user's browser never does: not for measuring.
CHROMIUM_ARGS = [*USER_CHROMIUM_ARGS, "--disable-gpu-compositing"]


@pytest.fixture(scope="package")
def browser():
    """One Chromium for the browser tests that run one after another. Package-scoped, not session-scoped: while
    Playwright's synchronous API is started, its event loop counts as running in this thread, and Django refuses
    database calls from a thread with a running loop (SynchronousOnlyOperation); under pytest-xdist a worker runs
    other folders' database tests after the browser tests it was given."""
    if not Path(CHROMIUM).exists():
        message = "Debian's chromium is not installed (apt-get install chromium chromium-driver)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="package")
def shared_web_stack(tmp_path_factory):
    """One stack (gateway, two conversion workers, edit service) for the browser modules a test process runs, started
    by the first that asks for it (each start took 10-40 s here). Package-scoped like `browser`: a pytest-xdist worker
    is given the browser modules one after another (they stand together in the collection), and the stack stops
    before the worker goes on. Each module converts its own models and makes its own projects on it; a module that
    changes the stack as a whole (turns accounts on, expects no model yet) overrides `web_stack` with
    `own_web_stack`."""
    with running_stack(tmp_path_factory.mktemp("web"), workers=2) as stack:
        yield stack


@pytest.fixture(scope="module")
def web_stack(shared_web_stack):
    return shared_web_stack


@pytest.fixture(scope="module")
def own_web_stack(tmp_path_factory):
    """A stack like the shared one for this module alone."""
    with running_stack(tmp_path_factory.mktemp("own-web"), workers=2) as stack:
        yield stack


class Page:
    """A browser page on the web client that keeps a screenshot of each step and fails on any page error."""

    def __init__(self, page, name: str):
        self.page = page
        self.name = name
        self.step = 0
        self.errors: list[str] = []
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def shot(self, label: str) -> Path:
        self.step += 1
        path = ARTIFACTS / f"{self.name}-{self.step:02d}-{label}.png"
        self.page.screenshot(path=str(path))
        return path

    def goto(self, url: str, **kwargs):
        """Opens a page of the web client and waits until its application chunk is running (its controls are inert
        before: the page's load event can come before the chunk)."""
        response = self.page.goto(url, **kwargs)
        self.page.wait_for_function("document.body && document.body.dataset.app === 'ready'", timeout=60_000)
        return response

    def __getattr__(self, name):
        return getattr(self.page, name)


@pytest.fixture
def page(browser, request):
    # Playwright's wait_for_function evaluates its predicate with eval(), which the gateway's CSP forbids; the policy
    # itself is tested in test_content_security_policy.py, on pages that do not bypass it.
    context = browser.new_context(viewport={"width": 1400, "height": 900}, bypass_csp=True)
    wrapped = Page(context.new_page(), request.node.name)
    yield wrapped
    context.close()
    assert wrapped.errors == [], wrapped.errors


# --- helpers shared by the browser tests ------------------------------------------------------------------------

# fraction of pixels of two same-sized PNGs (data URLs) whose colour differs by more than 30 (sum of |dr|+|dg|+|db|)
CHANGED_FRACTION_JS = """async ([a, b]) => {
  const load = async (src) => { const image = new Image(); image.src = src; await image.decode(); return image; };
  const [first, second] = [await load(a), await load(b)];
  const read = (image) => { const c = document.createElement("canvas"); c.width = image.width; c.height = image.height;
    const x = c.getContext("2d"); x.drawImage(image, 0, 0); return x.getImageData(0, 0, c.width, c.height).data; };
  const [p, q] = [read(first), read(second)];
  let changed = 0;
  for (let i = 0; i < p.length; i += 4) if (Math.abs(p[i] - q[i]) + Math.abs(p[i + 1] - q[i + 1]) + Math.abs(p[i + 2] - q[i + 2]) > 30) changed++;
  return changed / (p.length / 4);
}"""

# [r, g, b] averaged over a 3x3 square of a PNG (data URL) around (x, y)
PIXEL_JS = """async ([src, x, y]) => {
  const image = new Image(); image.src = src; await image.decode();
  const c = document.createElement("canvas"); c.width = image.width; c.height = image.height;
  const context = c.getContext("2d"); context.drawImage(image, 0, 0);
  const d = context.getImageData(Math.round(x) - 1, Math.round(y) - 1, 3, 3).data;
  const sum = [0, 0, 0];
  for (let i = 0; i < d.length; i += 4) { sum[0] += d[i]; sum[1] += d[i + 1]; sum[2] += d[i + 2]; }
  return sum.map((v) => v / 9);
}"""


def data_url(png: bytes) -> str:
    import base64

    return "data:image/png;base64," + base64.b64encode(png).decode()


def canvas_png(page) -> bytes:
    """The 3D canvas as the user sees it, after the next frames are drawn."""
    page.wait_for_timeout(400)
    return page.locator("[data-testid=canvas]").screenshot()


def changed_fraction(page, before: bytes, after: bytes) -> float:
    return page.evaluate(CHANGED_FRACTION_JS, [data_url(before), data_url(after)])


def pixel(page, png: bytes, x: float, y: float) -> list[float]:
    return page.evaluate(PIXEL_JS, [data_url(png), x, y])


def screen_position(page, guid):
    """Canvas position of an element's centre, or None when another element is in front of it there."""
    return page.evaluate("""(guid) => {
      const viewer = viewerApp.view3d.viewer;
      const object = viewer.scene.objects[guid];
      if (!object) return null; // no geometry (a storey)
      const aabb = object.aabb;
      const centre = [(aabb[0] + aabb[3]) / 2, (aabb[1] + aabb[4]) / 2, (aabb[2] + aabb[5]) / 2];
      const [x, y] = viewer.camera.projectWorldPos(centre);
      const hit = viewer.scene.pick({ canvasPos: [x, y] });
      return hit && hit.entity && hit.entity.id === guid ? [x, y] : null;
    }""", guid)


def wait_model_open(page):
    page.wait_for_function("document.querySelector('[data-testid=stage-state]').hidden", timeout=120_000)


def new_project(stack, title):
    created = stack.api("POST", "/api/v1/chat/projects", json={"title": title, "kind": "ifc"}).json()["data"]
    model_id = created["models"][0]
    assert stack.wait_model(model_id)["status"] == "ready"
    return model_id


def open_tab(page, stack, model_id, tab):
    page.goto(f"{stack.url}/#model={model_id}")
    wait_model_open(page)
    page.click(f"[data-tab={tab}]")


def upload_ready(stack, path, name=None) -> str:
    with open(path, "rb") as handle:
        model = stack.api("POST", "/api/v1/models", files={"file": (name or path.name, handle)}).json()["data"]
    assert stack.wait_model(model["id"])["status"] == "ready"
    return model["id"]


def manage_shell(stack, code: str) -> str:
    """Runs Python in the stack's Django environment (its database), e.g. to write frames into a session's event log
    the way the chat app does."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=stack.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout
