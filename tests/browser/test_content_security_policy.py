"""The web client and the Swagger UI page under the gateway's Content-Security-Policy, in Chromium: a model loads
and renders, and the browser reports no violation of the policy."""

import pytest

from tests.browser.conftest import ARTIFACTS, upload_ready
from tests.helpers import sample

pytestmark = pytest.mark.e2e

# every violation the page reports, from the first script on (the event fires for blocked scripts, styles, workers,
# images and connections alike)
RECORD_VIOLATIONS_JS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.effectiveDirective} blocked ${event.blockedURI || "(inline)"} at ${event.sourceFile}:${event.lineNumber}`);
});
"""


@pytest.fixture
def policed_page(browser):
    """A page that keeps the CSP (the shared `page` fixture bypasses it), recording violations, console messages
    and page errors; waits use locators only (Playwright's wait_for_function needs eval)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.console, page.errors = [], []
    page.on("console", lambda message: page.console.append(message.text))
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.add_init_script(RECORD_VIOLATIONS_JS)
    yield page
    context.close()


def violations(page) -> list[str]:
    return page.evaluate("window.__cspViolations") + [text for text in page.console if "Content Security Policy" in text]


def test_the_web_client_loads_a_model_under_the_policy(policed_page, web_stack):
    page = policed_page
    model_id = upload_ready(web_stack, sample("duplex.ifc"))
    response = page.goto(f"{web_stack.url}/#model={model_id}")
    assert "script-src 'self';" in response.headers["content-security-policy"]
    page.locator("body[data-app=ready]").wait_for(state="attached", timeout=60_000)
    page.locator("[data-testid=stage-state]").wait_for(state="hidden", timeout=120_000)  # the model is open
    page.locator("[data-testid=canvas]").click()  # a pick: xeokit reads the scene back
    page.click("[data-tab=chat]")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "csp-model-open.png"))
    assert violations(page) == [] and page.errors == []


def test_the_swagger_ui_page_works_under_the_policy(policed_page, web_stack):
    page = policed_page
    response = page.goto(f"{web_stack.url}/api/v1/docs")
    assert "script-src 'self';" in response.headers["content-security-policy"]
    page.locator(".swagger-ui").wait_for(timeout=60_000)  # the start script ran
    page.locator(".swagger-ui .information-container, .swagger-ui .errors-wrapper").first.wait_for(timeout=60_000)
    assert violations(page) == [] and page.errors == []
