"""A finished check as HTML report and BCF 3.0 archive (valid against the buildingSMART XSDs), and its failures
pinned as review issues, deduplicated across re-checks."""

import io
import os
import zipfile
from pathlib import Path

import pytest
import xmlschema
from bcf.v3.bcfxml import BcfXml

from checks_app.models import PinnedFailure
from issues_app.models import Issue
from models_app.storage import model_dir
from tests.checks.conftest import WALL_GUIDS, fire_ids, write_walls_ifc

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

BCF_SCHEMAS = Path(os.environ.get("VIEWER_BCF_TESTCASES_DIR") or Path(__file__).resolve().parents[2].parent / "shared" / "bcf-testcases") / "schemas"
HOSTILE = '<script>alert("x")</script> & "quotes"'


@pytest.fixture(scope="module")
def bcf_schemas():
    if not BCF_SCHEMAS.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{BCF_SCHEMAS} is missing; CI must have ../shared/bcf-testcases")
        pytest.skip(f"{BCF_SCHEMAS} not available")
    return {name: xmlschema.XMLSchema(str(BCF_SCHEMAS / f"{name}.xsd")) for name in ("markup", "visinfo", "version", "extensions", "project", "documents")}


def schema_for(entry: str) -> str | None:
    if entry == "bcf.version":
        return "version"
    return {".bcf": "markup", ".bcfv": "visinfo", ".bcfp": "project", ".xml": "extensions" if entry.endswith("extensions.xml") else "documents"}.get(Path(entry).suffix)


@pytest.fixture
def failing_check(make_model, put_ids, start_check):
    model = make_model(fire_ratings={"A": "REI60", "B": "60 min"}, names={"B": HOSTILE})
    put_ids("fire.ids", fire_ids(spec_name="Walls have a fire rating &lt;b&gt;"))
    put_ids("basics.ids", (Path(__file__).resolve().parents[2] / "checks_app" / "examples" / "review-basics.ids").read_bytes())
    return model, start_check(model.id, {"ids": ["fire.ids", "basics.ids"]})


def test_html_report_is_self_contained_and_escaped(api, failing_check):
    model, check = failing_check
    response = api.get(f"/api/v1/models/{model.id}/checks/{check['checkId']}/report.html")
    assert response.status_code == 200 and response["Content-Type"] == "text/html; charset=utf-8"
    html = response.content.decode()
    assert "<script>" not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quotes&quot;" in html
    assert "Walls have a fire rating &lt;b&gt;" in html and "<b>" not in html
    assert f"{check['result']['summary']['passed']} of 14 specifications pass" in html
    assert WALL_GUIDS["C"] in html and "no such property set" in html and "60 min" in html
    assert "src=" not in html and "href=" not in html  # nothing to fetch: it can be mailed as it is
    assert "default-src 'none'" in response["Content-Security-Policy"]


@pytest.mark.parametrize("per", ["element", "specification"])
def test_bcf_report_is_valid_bcf_3(api, failing_check, bcf_schemas, per):
    model, check = failing_check
    response = api.get(f"/api/v1/models/{model.id}/checks/{check['checkId']}/report.bcfzip", {"per": per})
    assert response.status_code == 200 and response["Content-Disposition"] == f'attachment; filename="{model.id}-{check["checkId"]}-{per}.bcfzip"'
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    validated = 0
    for entry in (entry for entry in archive.namelist() if not entry.endswith("/")):
        name = schema_for(entry)
        assert name, f"unexpected entry {entry}"
        bcf_schemas[name].validate(io.BytesIO(archive.read(entry)))
        validated += 1
    assert validated >= 3

    with BcfXml(filename=io.BytesIO(response.content)) as bcf:
        topics = {handler.topic.title: handler for handler in bcf.topics.values()}
        fire = [spec for spec in check["result"]["specifications"] if spec["ids"] == "fire.ids"][0]
        failing_guids = {f["guid"] for spec in check["result"]["specifications"] for f in spec["failures"]}
        selected = {title: [c.ifc_guid for vp in h.viewpoints.values() for c in vp.visualization_info.components.selection.component] for title, h in topics.items()}
        if per == "element":
            assert len(topics) == len(failing_guids) + sum(1 for s in check["result"]["specifications"] if s["status"] == "fail" and not s["failures"])
            wall_b = next(title for title in topics if title.startswith(HOSTILE))
            assert selected[wall_b] == [WALL_GUIDS["B"]] and "60 min" in topics[wall_b].topic.description
            (viewpoint,) = topics[wall_b].viewpoints.values()
            camera = viewpoint.visualization_info.perspective_camera
            assert check["result"]["locations"][WALL_GUIDS["B"]] == [5.0, 0.0, 0.0]
            looks_at = [camera.camera_view_point.x + camera.camera_direction.x * 10, camera.camera_view_point.y + camera.camera_direction.y * 10]
            assert looks_at[0] > camera.camera_view_point.x and camera.camera_direction.z < 0  # towards the wall, from above
        else:
            failing_specs = [s for s in check["result"]["specifications"] if s["status"] == "fail"]
            assert len(topics) == len(failing_specs)
            title = next(t for t in topics if t.startswith(fire["name"]))
            assert sorted(selected[title]) == sorted([WALL_GUIDS["B"], WALL_GUIDS["C"]]) and "2 of 3 elements fail" in title

    assert api.get(f"/api/v1/models/{model.id}/checks/{check['checkId']}/report.bcfzip", {"per": "storey"}).json()["code"] == 40001


def pin(api, model_id, check_id, **body):
    """Pins per element (the per-specification default is in test_pin_grouping.py)."""
    response = api.post(f"/api/v1/models/{model_id}/checks/{check_id}/issues", {"per": "element", **body}, format="json")
    assert response.status_code == 200, response.content
    return {key: sorted(item["guid"] for item in items) for key, items in response.json()["data"].items()}


def rewrite_model(model, **walls):
    folder = model_dir(model.id)
    write_walls_ifc(folder / "next.ifc", **walls)
    (folder / "next.ifc").replace(folder / "model.ifc")


def test_pinning_deduplicates_across_re_checks(api, make_model, put_ids, start_check):
    model = make_model()
    put_ids("fire.ids", fire_ids())
    a, b, c = WALL_GUIDS["A"], WALL_GUIDS["B"], WALL_GUIDS["C"]

    first = start_check(model.id, {"ids": ["fire.ids"]})
    assert pin(api, model.id, first["checkId"], author="reviewer") == {"created": [a, b, c], "reopened": [], "resolved": [], "unchanged": []}
    issue_a = Issue.objects.get(entity_id=a)
    assert issue_a.title == "IDS: Walls have a fire rating" and issue_a.author == "reviewer" and issue_a.entity_type == "IfcWall"
    assert "found no such property set" in issue_a.comment and issue_a.entity_name == "Wall A"
    assert pin(api, model.id, first["checkId"]) == {"created": [], "reopened": [], "resolved": [], "unchanged": [a, b, c]}
    assert Issue.objects.count() == 3

    rewrite_model(model, fire_ratings={"A": "REI60"})  # A fixed
    second = start_check(model.id, {"ids": ["fire.ids"]})
    assert pin(api, model.id, second["checkId"]) == {"created": [], "reopened": [], "resolved": [a], "unchanged": [b, c]}
    assert Issue.objects.get(entity_id=a).status == "resolved"

    issue_b = Issue.objects.get(entity_id=b)
    api.patch(f"/api/v1/models/{model.id}/issues/{issue_b.id}", {"status": "resolved"}, format="json")  # resolved by hand, still failing
    rewrite_model(model, fire_ratings={"C": "REI30"})  # A broken again, C fixed
    third = start_check(model.id, {"ids": ["fire.ids"]})
    assert pin(api, model.id, third["checkId"], provenance={"source": "AI"}) == {"created": [], "reopened": [a, b], "resolved": [c], "unchanged": []}
    assert {i.entity_id: i.status for i in Issue.objects.all()} == {a: "open", b: "open", c: "resolved"}

    Issue.objects.filter(entity_id=b).delete()  # a deleted issue takes its link along: the next pin creates a new one
    assert pin(api, model.id, third["checkId"]) == {"created": [b], "reopened": [], "resolved": [], "unchanged": [a]}
    assert PinnedFailure.objects.count() == 3 and Issue.objects.filter(entity_id=b).get().provenance == "UI"


def test_pinning_leaves_other_ids_files_alone_and_needs_a_done_check(api, make_model, put_ids, start_check):
    model = make_model()
    put_ids("fire.ids", fire_ids())
    put_ids("other.ids", fire_ids(spec_name="Other fire rule"))
    first = start_check(model.id, {"ids": ["fire.ids"]})
    pin(api, model.id, first["checkId"])
    other = start_check(model.id, {"ids": ["other.ids"]})
    assert pin(api, model.id, other["checkId"])["created"] == sorted(WALL_GUIDS.values())  # its own issues, fire.ids' untouched
    assert Issue.objects.filter(status="open").count() == 6

    queued = api.post(f"/api/v1/models/{model.id}/checks", {"ids": ["fire.ids", "other.ids"]}, format="json").json()["data"]
    response = api.post(f"/api/v1/models/{model.id}/checks/{queued['checkId']}/issues", {}, format="json")
    assert (response.status_code, response.json()["code"]) == (409, 40900)
    bad = api.post(f"/api/v1/models/{model.id}/checks/{first['checkId']}/issues", {"provenance": {"source": "robot"}}, format="json")
    assert bad.json()["code"] == 40001 and Issue.objects.count() == 6


def test_a_required_specification_without_elements_is_pinned_once_without_element(api, make_model, put_ids, start_check):
    model = make_model()
    required = fire_ids().replace(b'minOccurs="0"', b'minOccurs="1"').replace(b"IFCWALL", b"IFCDOOR")
    put_ids("doors.ids", required)
    check = start_check(model.id, {"ids": ["doors.ids"]})
    (spec,) = check["result"]["specifications"]
    assert (spec["status"], spec["applicable"], spec["failures"]) == ("fail", 0, [])
    assert "at least 1 required" in spec["reason"]
    assert pin(api, model.id, check["checkId"]) == {"created": [""], "reopened": [], "resolved": [], "unchanged": []}
    issue = Issue.objects.get()
    assert issue.entity_id == "" and "at least 1 required" in issue.comment
