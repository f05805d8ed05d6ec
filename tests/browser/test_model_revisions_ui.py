"""A new revision of an uploaded model from the web client: the button shows for the uploaded model on screen (not
for a script-built one), the upload converts in place (same model id), and the diff panel compares the revisions
by GlobalId."""

import ifcopenshell
import pytest

from tests.browser.conftest import new_project, open_tab, upload_ready, wait_model_open
from tests.helpers import sample

pytestmark = pytest.mark.e2e


def renamed_wall_revision(tmp_path):
    model = ifcopenshell.open(str(sample("IfcOpenHouse_IFC4.ifc")))
    wall = sorted(model.by_type("IfcWall"), key=lambda w: w.GlobalId)[0]
    wall.Name = "North wall, next week's export"
    path = tmp_path / "IfcOpenHouse next week.ifc"
    model.write(str(path))
    return path, wall.GlobalId


def test_a_new_revision_is_uploaded_and_compared_with_the_first(page, web_stack, tmp_path):
    model_id = upload_ready(web_stack, sample("IfcOpenHouse_IFC4.ifc"), name="House.ifc")
    revision, wall = renamed_wall_revision(tmp_path)
    open_tab(page, web_stack, model_id, "diff")
    item = page.locator(f"[data-testid=model-item][data-model-id={model_id}]")
    item.locator("[data-testid=revision-button]").wait_for()

    item.locator("[data-testid=revision-upload]").set_input_files(str(revision))
    page.locator(".toast", has_text="revision v2 uploaded").wait_for()
    assert web_stack.wait_model(model_id)["status"] == "ready"
    wait_model_open(page)
    page.locator("[data-testid=diff-base] option[value=v1]").wait_for(state="attached")
    page.select_option("[data-testid=diff-base]", "v1")
    page.select_option("[data-testid=diff-target]", "v2")
    page.click("[data-testid=compare]")
    counts = page.locator("[data-testid=diff-counts]")
    counts.wait_for()
    assert counts.inner_text().startswith("0 added · 0 removed · 1 changed")
    assert page.locator(f"[data-testid=diff-item][data-guid='{wall}']").count() == 1
    page.shot("revision-diff")


def test_a_script_built_model_offers_no_revision_upload(page, web_stack):
    model_id = new_project(web_stack, "Skeleton")
    page.goto(f"{web_stack.url}/#model={model_id}")
    wait_model_open(page)
    page.locator("#on-screen").wait_for()
    assert page.locator(f"[data-testid=model-item][data-model-id={model_id}] [data-testid=revision-button]").count() == 0
