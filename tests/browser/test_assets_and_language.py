"""Fast and offline: the web client's code in content-hashed chunks served immutable and pre-compressed (brotli,
gzip), the stable entry revalidated; model.xkt and metadata.json revalidated by ETag (a reload transfers headers
only); panels' code fetched on first use; the UI in English and Chinese, switched and remembered."""

import re

import pytest

from tests.browser.conftest import upload_ready, wait_model_open
from tests.helpers import sample

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def duplex(web_stack):
    return upload_ready(web_stack, sample("duplex.ifc"))


def test_hashed_chunks_are_immutable_and_compressed(web_stack):
    page = web_stack.session.get(web_stack.url + "/").text
    entry = re.search(r'<script type="module" src="(/static/viewer/app\.js)"', page).group(1)
    response = web_stack.session.get(web_stack.url + entry, headers={"Accept-Encoding": "identity"})
    assert response.headers["Cache-Control"] == "max-age=0, public" and "ETag" in response.headers  # revalidated
    assert len(response.content) < 1024
    chunk = re.search(r"\./(chunks/main-[A-Z0-9]{8}\.js)", response.text).group(1)
    url = f"{web_stack.url}/static/viewer/{chunk}"
    plain = web_stack.session.get(url, headers={"Accept-Encoding": "identity"})
    assert "immutable" in plain.headers["Cache-Control"] and "max-age=315360000" in plain.headers["Cache-Control"]
    for encoding in ("br", "gzip"):
        compressed = web_stack.session.get(url, headers={"Accept-Encoding": encoding}, stream=True)
        assert compressed.headers["Content-Encoding"] == encoding
        assert int(compressed.headers["Content-Length"]) < len(plain.content) / 3
        assert "immutable" in compressed.headers["Cache-Control"]
        compressed.close()
    stylesheet = web_stack.session.get(web_stack.url + "/static/viewer/style.css", headers={"Accept-Encoding": "br"})
    assert stylesheet.headers["Content-Encoding"] == "br" and stylesheet.headers["Cache-Control"] == "max-age=0, public"


RESOURCES_JS = """() => performance.getEntriesByType("resource").filter((e) => /model\\.xkt|metadata\\.json/.test(e.name))
  .map((e) => ({ name: e.name, transferSize: e.transferSize, encodedBodySize: e.encodedBodySize }))"""


def test_model_files_are_revalidated_by_etag_and_panels_load_lazily(page, web_stack, duplex):
    chunks = []
    page.on("request", lambda request: "/static/viewer/chunks/" in request.url and chunks.append(request.url.rsplit("/", 1)[1]))
    page.goto(f"{web_stack.url}/#model={duplex}")
    wait_model_open(page)
    first = page.evaluate(RESOURCES_JS)
    assert sorted(e["name"].rsplit("/", 1)[1] for e in first) == ["metadata.json", "model.xkt"]  # no cache-busting query
    assert all(e["transferSize"] > e["encodedBodySize"] > 1000 for e in first), first
    assert not any(name.startswith("script-") for name in chunks), "the script editor is fetched only when opened"
    page.click("[data-tab=script]")
    page.locator(".cm-content").wait_for()
    assert any(name.startswith("script-") for name in chunks)

    page.reload()
    wait_model_open(page)
    again = page.evaluate(RESOURCES_JS)
    # revalidated: 304, so only headers travel (transferSize 0 would mean served from cache without asking)
    assert all(0 < e["transferSize"] < 1000 and e["encodedBodySize"] > 1000 for e in again), again


def test_the_language_switch_changes_and_remembers_the_ui_text(page, web_stack, duplex):
    page.goto(f"{web_stack.url}/#model={duplex}")
    wait_model_open(page)
    assert page.locator("[data-tab=issues]").inner_text() == "Issues"
    page.select_option("[data-testid=language]", "zh")
    assert page.locator("[data-tab=issues]").inner_text() == "问题"
    assert page.locator("[data-testid=fit-all]").inner_text() == "全部缩放"
    assert page.locator("[data-testid=tree-search]").get_attribute("placeholder") == "按名称、类别或 GlobalId 搜索"
    assert page.evaluate("document.documentElement.lang") == "zh-CN"
    page.click("[data-tab=chat]")
    assert page.locator("[data-testid=send]").inner_text() == "发送"
    page.shot("chinese")
    page.reload()
    wait_model_open(page)
    assert page.locator("[data-tab=issues]").inner_text() == "问题"
    page.select_option("[data-testid=language]", "en")
    assert page.locator("[data-tab=issues]").inner_text() == "Issues"


def test_controls_wait_for_the_application_chunk(page, web_stack):
    """The page's load event can come before the application chunk runs; until it has attached its handlers the
    controls are inert (a click would otherwise be lost), then they work."""
    held = []
    page.route("**/static/viewer/chunks/main-*.js", lambda route: held.append(route))
    page.page.goto(web_stack.url + "/", wait_until="domcontentloaded")
    page.wait_for_function("document.querySelector('[data-testid=new-project]') !== null")
    for _ in range(100):
        if held:
            break
        page.page.wait_for_timeout(100)
    assert held, "the application chunk was requested"
    assert page.evaluate("document.body.dataset.app") == "starting"
    assert page.evaluate("getComputedStyle(document.querySelector('[data-testid=new-project]')).pointerEvents") == "none"
    held[0].continue_()
    page.wait_for_function("document.body.dataset.app === 'ready'", timeout=30_000)
    assert page.evaluate("getComputedStyle(document.querySelector('[data-testid=new-project]')).pointerEvents") == "auto"
