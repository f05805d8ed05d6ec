"""Details a reviewer meets, in a real Chromium against the real stack: the navigator's search by IFC class, an
upload button in sight and deleting a model (to the trash), the address's #model= followed in an open tab, overrides
in the property table, and no chat stream for a model whose chat is never opened."""

import re

import pytest

from tests.browser.conftest import upload_ready, wait_model_open
from tests.helpers import sample

pytestmark = pytest.mark.e2e

DOOR = "1Oms875aH3Wg$9l65H2ZGw"  # Innentuer-1, an IfcDoor of AC20-FZK-Haus.ifc


@pytest.fixture(scope="module")
def haus(web_stack):
    return upload_ready(web_stack, sample("AC20-FZK-Haus.ifc"))


@pytest.fixture(scope="module")
def house(web_stack):
    return upload_ready(web_stack, sample("IfcOpenHouse_IFC4.ifc"))


def open_at(page, stack, model_id):
    page.goto(f"{stack.url}/#model={model_id}")
    wait_model_open(page)


def test_the_search_finds_elements_by_class(page, web_stack, haus):
    open_at(page, web_stack, haus)
    doors = page.evaluate("Object.values(viewerApp.view3d.viewer.metaScene.metaObjects).filter((m) => m.type === 'IfcDoor').map((m) => m.name).sort()")
    assert len(doors) == 5 and not any("door" in name.lower() for name in doors)  # found by class, not by name
    for query in ["door", "IFCDOOR", "IfcDoor "]:
        page.fill("[data-testid=tree-search]", query)
        results = page.locator("[data-testid=tree-result]")
        results.first.wait_for()
        assert sorted(text.split(" IfcDoor")[0] for text in results.all_inner_texts()) == doors, query
    page.shot("doors")


def test_upload_is_a_visible_button_and_a_model_can_be_deleted(page, web_stack):
    page.goto(web_stack.url + "/")
    assert page.locator("[data-testid=upload-button]").is_visible()
    page.set_input_files("[data-testid=upload]", {"name": "To delete.ifc", "mimeType": "application/x-step", "buffer": sample("IfcOpenHouse_IFC4.ifc").read_bytes()})
    item = page.locator("[data-testid=model-item]", has_text="To delete.ifc")
    item.wait_for()
    model_id = item.get_attribute("data-model-id")
    assert web_stack.wait_model(model_id)["status"] == "ready"
    page.shot("uploaded")

    messages = []

    def answer(dialog, accept):
        messages.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda dialog: answer(dialog, False))
    item.locator("[data-testid=delete-model]").click()
    assert "trash" in messages[0]
    assert web_stack.api("GET", f"/api/v1/models/{model_id}").status_code == 200  # dismissed: nothing happens

    page.once("dialog", lambda dialog: answer(dialog, True))
    item.locator("[data-testid=delete-model]").click()
    page.locator(f"[data-testid=model-item][data-model-id={model_id}]").wait_for(state="detached")
    assert web_stack.api("GET", f"/api/v1/models/{model_id}").status_code == 404
    trash = web_stack.api("GET", "/api/v1/trash").json()["data"]
    assert any(model_id in str(entry) for entry in trash)
    page.shot("deleted")


def test_a_changed_address_opens_that_model(page, web_stack, haus, house):
    open_at(page, web_stack, haus)
    page.evaluate("(id) => { window.location.hash = `model=${id}`; }", house)
    page.wait_for_function("(id) => viewerApp.model && viewerApp.model.id === id && viewerApp.onScreen && viewerApp.onScreen.modelId === id", arg=house, timeout=60_000)
    assert page.locator("[data-testid=model-title]").inner_text() == "IfcOpenHouse_IFC4.ifc"
    assert page.locator("[data-testid=model-item].current").get_attribute("data-model-id") == house
    page.go_back()  # the history too: back to the first model
    page.wait_for_function("(id) => viewerApp.model && viewerApp.model.id === id", arg=haus, timeout=60_000)


def test_an_override_shows_in_the_property_table(page, web_stack, haus):
    saved = web_stack.api("PUT", f"/api/v1/models/{haus}/entities/{DOOR}/properties",
                          json={"entityName": "Innentuer-1", "fields": {"Name": "Haustür", "FireRating": "EI30"}})
    assert saved.status_code == 200, saved.text
    open_at(page, web_stack, haus)
    page.evaluate("(id) => viewerApp.view3d.select(id)", DOOR)
    table = page.locator("[data-testid=overridden-properties]")
    table.wait_for()
    rows = {row.locator("th").inner_text(): row for row in table.locator("tr").all()}
    assert set(rows) == {"Name", "FireRating"}
    assert re.search(r"Haustür", rows["Name"].locator("[data-testid=overridden-value]").inner_text())
    assert rows["Name"].locator("[data-testid=original-value]").inner_text() == "Innentuer-1"
    assert "EI30" in rows["FireRating"].inner_text() and rows["FireRating"].locator("[data-testid=original-value]").inner_text() == "—"
    page.shot("override")


def test_the_chat_starts_only_when_its_tab_is_opened(page, web_stack, haus, house):
    chat_requests = []
    page.on("request", lambda request: chat_requests.append(request.url) if "/api/v1/chat/" in request.url else None)
    page.goto(web_stack.url + "/")
    page.evaluate("(id) => viewerApp.models.refresh().then(() => viewerApp.openModel(id))", haus)  # resolves once all is loaded
    page.click("[data-tab=issues]")
    page.locator("[data-testid=issues]").wait_for()
    assert chat_requests == [] and page.evaluate("viewerApp.panels.chat === undefined")

    with page.expect_request(re.compile(r"/api/v1/chat/sessions/[^/]+/events")):
        page.click("[data-tab=chat]")
    page.wait_for_function("(id) => viewerApp.loaded.chat && viewerApp.loaded.chat.session && viewerApp.loaded.chat.session.modelId === id", arg=haus)
    # from then on it follows the open model
    page.evaluate("(id) => { window.location.hash = `model=${id}`; }", house)
    page.wait_for_function("(id) => viewerApp.loaded.chat.session && viewerApp.loaded.chat.session.modelId === id", arg=house, timeout=60_000)
