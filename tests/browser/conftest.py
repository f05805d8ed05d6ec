"""The web client in a real headless Chromium (Debian's package, driven by Playwright), against the real processes.
Screenshots of every step go to test-artifacts/browser/ (not committed)."""

import os
import shutil
from pathlib import Path

import pytest

from tests.e2e.stack import ROOT, Stack

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
# Software WebGL (SwiftShader) and the flags for a machine without a display or network.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--disable-quic",
    "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        message = "Debian's chromium is not installed (apt-get install chromium chromium-driver)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def web_stack(tmp_path_factory):
    running = Stack(tmp_path_factory.mktemp("web"), workers=2).start()
    yield running
    running.stop()


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

    def __getattr__(self, name):
        return getattr(self.page, name)


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    wrapped = Page(context.new_page(), request.node.name)
    yield wrapped
    context.close()
    assert wrapped.errors == [], wrapped.errors
