"""The IDS checks tab in the browser, against the real stack with a check worker (`manage.py check_worker`): an IDS
file uploaded to the project, a check queued (the worker held with SIGSTOP so the queued state is on screen) then
run, the failing specification and element listed with requirement / found / expected, the element selected and
flown to in 3D, "select all failing", pinning as issues (created, then unchanged on a second pin), the HTML report and
the BCF archive; a model outside any project checked with an IDS file from disk."""

import io
import os
import signal
import zipfile

import pytest

from tests.browser.conftest import canvas_png, changed_fraction, new_project, open_tab, upload_ready
from tests.e2e.stack import ROOT, Stack
from tests.helpers import sample

pytestmark = pytest.mark.e2e

IDS = ROOT / "checks_app" / "examples" / "review-basics.ids"


@pytest.fixture(scope="module")
def checks_stack(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("checks-web"), workers=1).start()
    stack.start_check_worker()
    yield stack
    stack.stop()


def hold_worker(stack, held: bool) -> None:
    os.killpg(stack.processes["checks0"].pid, signal.SIGSTOP if held else signal.SIGCONT)


def test_upload_check_select_and_pin(page, checks_stack):
    stack = checks_stack
    model_id = new_project(stack, "Checked")
    project_id = stack.api("POST", "/api/v1/chat/sessions", json={"modelId": model_id}).json()["data"]["projectId"]
    open_tab(page, stack, model_id, "checks")
    page.locator("[data-testid=ids-hint]", has_text="No IDS files yet").wait_for()
    page.set_input_files("[data-testid=ids-upload]", str(IDS))
    page.locator("[data-testid=ids-file][data-name='review-basics.ids']", has_text="13 specifications").wait_for()
    (kept,) = stack.api("GET", f"/api/v1/projects/{project_id}/ids").json()["data"]
    assert (kept["name"], kept["specifications"]) == ("review-basics.ids", 13)
    page.locator("[data-testid=check-version] option").nth(1).wait_for(state="attached")
    assert page.locator("[data-testid=check-version] option").all_inner_texts() == ["current product", "v1"]
    page.shot("ids-uploaded")

    hold_worker(stack, True)
    try:
        page.click("[data-testid=check-run]")
        page.locator("[data-testid=check-item][data-status=queued]").wait_for()
        page.locator("[data-testid=check-progress]", has_text="queued").wait_for(timeout=10_000)
        page.shot("queued")
    finally:
        hold_worker(stack, False)
    page.locator("[data-testid=check-item][data-status=done], [data-testid=check-item][data-status=failed]").wait_for(timeout=120_000)
    (listed,) = stack.api("GET", f"/api/v1/models/{model_id}/checks").json()["data"]
    assert listed["status"] == "done", listed
    page.locator("[data-testid=spec-item]").first.wait_for()
    assert page.locator("[data-testid=check-progress]").is_hidden()
    (check,) = stack.api("GET", f"/api/v1/models/{model_id}/checks").json()["data"]
    summary = check["summary"]
    assert page.locator("[data-testid=spec-item]").count() == summary["specifications"] == 13
    failing = page.locator("[data-testid=spec-item][data-status=fail]")
    assert failing.count() == summary["failed"] >= 1
    assert f"{summary['passed']} of 13 specifications pass" in page.locator("[data-testid=check-summary]").inner_text()
    slab = failing.filter(has_text="Slabs have a material")
    assert slab.locator("[data-testid=spec-counts]").inner_text().startswith("1 applicable · 1 failing")
    row = slab.locator("[data-testid=failure-row]")
    assert row.count() == 1
    assert [cell.strip() for cell in row.locator("td").all_inner_texts()[1:]] == ["Shall have a material", "no material", "a material"]
    guid = row.get_attribute("data-guid")
    page.shot("result")

    before = canvas_png(page)
    row.click()
    page.wait_for_timeout(700)  # the camera flies to the element
    assert page.evaluate("viewerApp.view3d.selectedIds()") == [guid]
    assert changed_fraction(page, before, canvas_png(page)) > 0.02
    page.shot("selected")
    every = sorted({f["guid"] for spec in stack.api("GET", f"/api/v1/models/{model_id}/checks/{check['checkId']}").json()["data"]["result"]["specifications"] for f in spec["failures"]})
    page.evaluate("viewerApp.view3d.select(null)")
    page.click("[data-testid=check-select-all]")
    assert sorted(page.evaluate("viewerApp.view3d.selectedIds()")) == every

    page.click("[data-testid=check-pin]")
    counts = page.locator("[data-testid=check-pin-counts]")
    counts.wait_for()
    failed = summary["failed"]  # one issue per failing specification, its failing elements selected by its viewpoint
    assert counts.inner_text() == f"Issues: {failed} created, 0 reopened, 0 resolved, 0 unchanged"
    pinned = stack.api("GET", f"/api/v1/models/{model_id}/issues").json()["data"]
    assert len(pinned) == failed and all(issue["title"].startswith("IDS: ") for issue in pinned)
    assert {c["ifc_guid"] for issue in pinned for vp in issue["viewpoints"] for c in vp["components"]["selection"]} == set(every)
    page.click("[data-tab=issues]")
    page.locator("[data-testid=issue-item]", has_text="IDS: Slabs have a material").wait_for()
    page.click("[data-tab=checks]")
    page.click("[data-testid=check-pin]")
    page.locator("[data-testid=check-pin-counts]", has_text=f"0 created, 0 reopened, 0 resolved, {failed} unchanged").wait_for()
    assert len(stack.api("GET", f"/api/v1/models/{model_id}/issues").json()["data"]) == len(pinned)
    page.shot("pinned")

    with page.expect_popup() as popup:
        page.click("[data-testid=check-report-html]")
    report = popup.value
    report.wait_for_load_state()
    assert "Slabs have a material" in report.content()
    report.close()
    with page.expect_download() as download:
        page.click("[data-testid=check-bcf-element]")
    with zipfile.ZipFile(io.BytesIO(open(download.value.path(), "rb").read())) as archive:
        markups = [name for name in archive.namelist() if name.endswith("markup.bcf")]
        assert len(markups) == len(every) and guid.encode() in b"".join(archive.read(name) for name in archive.namelist() if name.endswith(".bcfv"))

    page.on("dialog", lambda dialog: dialog.accept())
    page.click("[data-testid=ids-file-delete]")
    page.locator("[data-testid=ids-hint]", has_text="No IDS files yet").wait_for()
    assert stack.api("GET", f"/api/v1/projects/{project_id}/ids").json()["data"] == []
    assert page.locator("[data-testid=check-item]").count() == 1  # the check keeps what it ran with


def test_a_model_outside_any_project_is_checked_with_a_file_from_disk(page, checks_stack):
    model_id = upload_ready(checks_stack, sample("duplex.ifc"))
    open_tab(page, checks_stack, model_id, "checks")
    page.locator("[data-testid=ids-hint]", has_text="belongs to no project").wait_for()
    page.locator("[data-testid=check-version] option").first.wait_for(state="attached")
    assert page.locator("[data-testid=check-version] option").all_inner_texts() == ["current product"]
    page.set_input_files("[data-testid=check-run-files]", str(IDS))
    page.locator("[data-testid=check-item][data-status=done], [data-testid=check-item][data-status=failed]").wait_for(timeout=120_000)
    (listed,) = checks_stack.api("GET", f"/api/v1/models/{model_id}/checks").json()["data"]
    assert listed["status"] == "done", listed
    page.locator("[data-testid=spec-item]").first.wait_for()
    (check,) = checks_stack.api("GET", f"/api/v1/models/{model_id}/checks").json()["data"]
    assert [ids["name"] for ids in check["ids"]] == ["review-basics.ids"]
    assert page.locator("[data-testid=spec-item][data-status=fail]").count() == check["summary"]["failed"] >= 1
    row = page.locator("[data-testid=failure-row]:not(.absent)").first  # an element with geometry
    guid = row.get_attribute("data-guid")
    row.click()
    assert page.evaluate("viewerApp.view3d.selectedIds()") == [guid]
    page.shot("duplex")
