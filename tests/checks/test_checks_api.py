"""Checks of a model against IDS files: POST/GET /api/v1/models/{id}/checks[/{checkId}], the cache, overrides, a
failed check's error, recovery of interrupted checks and bad inputs. The check's child process runs for real."""

import hashlib
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from checks_app import services
from checks_app.models import Check, IdsDocument, IdsFile
from issues_app.models import Override
from models_app.storage import model_dir
from tests.checks.conftest import EXAMPLE_IDS, WALL_GUIDS, fire_ids, write_walls_ifc
from tests.helpers import sample

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]


def test_a_check_runs_and_keeps_its_result(api, make_model, put_ids, start_check):
    model = make_model(fire_ratings={"A": "REI60", "B": "60 min"})
    put_ids("fire.ids", fire_ids())
    posted = api.post(f"/api/v1/models/{model.id}/checks", {"ids": ["fire.ids"]}, format="json").json()["data"]
    assert (posted["status"], posted["progress"], posted["cached"]) == ("queued", {"phase": "queued", "percent": 0}, False)

    check = start_check(model.id, {"ids": ["fire.ids"]})  # the same request: answered by the queued check, then run
    assert check["checkId"] == posted["checkId"] and check["cached"] is True
    assert (check["status"], check["progress"], check["version"], check["error"]) == ("done", {"phase": "done", "percent": 100}, "current", "")
    result = check["result"]
    assert result["summary"] == {"specifications": 1, "passed": 0, "failed": 1, "failures": 2}
    (spec,) = result["specifications"]
    assert (spec["name"], spec["applicable"], spec["status"], spec["ids"]) == ("Walls have a fire rating", 3, "fail", "fire.ids")
    failures = {failure["guid"]: failure for failure in spec["failures"]}
    assert set(failures) == {WALL_GUIDS["B"], WALL_GUIDS["C"]}
    b, c = failures[WALL_GUIDS["B"]], failures[WALL_GUIDS["C"]]
    assert (b["name"], b["type"], b["found"]) == ("Wall B", "IfcWall", "60 min")
    assert "REI[0-9]+" in b["expected"] and "FireRating" in b["requirement"]
    assert c["found"] == "no such property set"
    assert result["overrides"] == {"included": False}

    listing = api.get(f"/api/v1/models/{model.id}/checks").json()["data"]
    assert [item["checkId"] for item in listing] == [check["checkId"]] and "result" not in listing[0]
    assert listing[0]["summary"]["failed"] == 1


def test_the_answer_passes_the_stored_result_on_unchanged(api, make_model, put_ids, start_check, settings):
    """The single-check answer carries the result's JSON text as the database holds it (not decoded and encoded again):
    null while queued, then exactly the stored result, whatever its text holds."""
    model = make_model(fire_ratings={"A": "REI60", "B": "60 min"})
    put_ids("fire.ids", fire_ids())
    posted = api.post(f"/api/v1/models/{model.id}/checks", {"ids": ["fire.ids"]}, format="json").json()["data"]
    url = f"/api/v1/models/{model.id}/checks/{posted['checkId']}"
    queued = api.get(url).json()
    assert (queued["code"], queued["data"]["status"], queued["data"]["result"]) == (0, "queued", None)

    start_check(model.id, {"ids": ["fire.ids"]})
    stored = Check.objects.get(pk=posted["checkId"])
    stored.result["specifications"][0]["name"] = 'Wände "tragend" \\ 壁 </script> \u2028'
    stored.save(update_fields=["result"])
    answer = api.get(url)
    assert answer["Content-Type"] == "application/json"
    data = answer.json()["data"]
    assert data["result"] == Check.objects.get(pk=posted["checkId"]).result and data["summary"] == stored.summary
    assert data["result"]["specifications"][0]["name"] == 'Wände "tragend" \\ 壁 </script> \u2028'
    assert list(data) == ["checkId", "modelId", "version", "ids", "includeOverrides", "status", "progress", "error", "summary",
                          "createdAt", "startedAt", "finishedAt", "result"]

    stored.result["specifications"][0]["name"] = f"read from {settings.DATA_DIR}/models/{model.id}/model.ifc"
    stored.save(update_fields=["result"])
    text = api.get(url).content.decode()
    assert str(settings.DATA_DIR) not in text and f"read from <data>/models/{model.id}/model.ifc" in text  # no host path leaks


def test_same_ids_and_version_is_answered_from_the_cache_without_running(api, make_model, put_ids, start_check, run_checks):
    model = make_model()
    put_ids("fire.ids", fire_ids())
    first = start_check(model.id, {"ids": ["fire.ids"]})
    again = start_check(model.id, {"ids": ["fire.ids"], "version": "current"}, run=False)
    assert (again["checkId"], again["status"], again["cached"]) == (first["checkId"], "done", True)
    assert run_checks() == [] and Check.objects.count() == 1

    put_ids("fire.ids", fire_ids(title="changed"))  # other IDS content: a new check
    assert start_check(model.id, {"ids": ["fire.ids"]})["checkId"] != first["checkId"]
    folder = model_dir(model.id)
    write_walls_ifc(folder / "model.ifc.new", fire_ratings={"A": "REI30"})
    (folder / "model.ifc.new").replace(folder / "model.ifc")  # a new product: a new check
    assert Check.objects.count() == 2
    third = start_check(model.id, {"ids": ["fire.ids"]})
    assert third["cached"] is False and third["result"]["summary"]["failures"] == 2


def test_uploaded_ids_files(api, make_model, run_checks):
    model = make_model(in_project=False)
    parts = {"ids": [SimpleUploadedFile("fire ratings.ids", fire_ids()), SimpleUploadedFile("basics.ids", EXAMPLE_IDS.read_bytes())]}
    started = api.post(f"/api/v1/models/{model.id}/checks", parts, format="multipart").json()
    assert started["code"] == 0, started
    run_checks()
    check = api.get(f"/api/v1/models/{model.id}/checks/{started['data']['checkId']}").json()["data"]
    assert [item["name"] for item in check["ids"]] == ["fire_ratings.ids", "basics.ids"]
    assert check["result"]["summary"]["specifications"] == 14
    names = {spec["name"]: spec for spec in check["result"]["specifications"]}
    assert names["The model has a project"]["status"] == "pass"
    assert names["No generic proxies"]["status"] == "pass" and names["Walls are contained in a storey"]["status"] == "pass"


def test_uploaded_contents_are_kept_once_and_unused_ones_go_with_the_next_new_content(api, make_model):
    """The same content under two names is one document of the check; the content of a request refused after it was
    kept (a later part invalid) stays until a request keeps new content, which sweeps what nothing uses."""
    model = make_model(in_project=False)

    def post(*parts):
        return api.post(f"/api/v1/models/{model.id}/checks", {"ids": [SimpleUploadedFile(name, data) for name, data in parts]}, format="multipart").json()

    started = post(("a.ids", fire_ids()), ("b.ids", fire_ids()))
    assert started["code"] == 0, started
    check = Check.objects.get(pk=started["data"]["checkId"])
    assert [item["name"] for item in check.ids] == ["a.ids", "b.ids"] and check.documents.count() == 1
    refused = post(("c.ids", fire_ids(title="kept, then refused with its request")), ("d.ids", b"not xml"))
    assert refused["code"] == 40001 and IdsDocument.objects.count() == 2
    assert post(("a.ids", fire_ids()))["code"] == 0 and IdsDocument.objects.count() == 2  # nothing new kept: no sweep
    assert post(("e.ids", fire_ids(title="new")))["code"] == 0
    assert sorted(document.title for document in IdsDocument.objects.all()) == ["Fire ratings", "new"]


def test_overrides_count_when_included(api, make_model, put_ids, start_check):
    model = make_model(fire_ratings={"B": "60 min"})
    Override.objects.create(model=model, entity_id=WALL_GUIDS["B"], field="FireRating", value="REI90")
    Override.objects.create(model=model, entity_id=WALL_GUIDS["C"], field="FireRating", value="REI30")
    Override.objects.create(model=model, entity_id=WALL_GUIDS["C"], field="Name", value="Firewall C")
    Override.objects.create(model=model, entity_id="3zzzzzzzzzzzzzzzzzzzzz", field="Name", value="gone")
    put_ids("fire.ids", fire_ids())
    without = start_check(model.id, {"ids": ["fire.ids"]})
    assert {f["guid"] for f in without["result"]["specifications"][0]["failures"]} == set(WALL_GUIDS.values())

    with_overrides = start_check(model.id, {"ids": ["fire.ids"], "includeOverrides": True})
    assert with_overrides["checkId"] != without["checkId"] and with_overrides["includeOverrides"] is True
    assert [f["guid"] for f in with_overrides["result"]["specifications"][0]["failures"]] == [WALL_GUIDS["A"]]
    assert with_overrides["result"]["overrides"] == {"included": True, "elements": 2, "fields": 3, "missing": ["3zzzzzzzzzzzzzzzzzzzzz"], "failed": []}

    Override.objects.filter(entity_id=WALL_GUIDS["C"], field="FireRating").update(value="none")  # other overrides: a new check
    changed = start_check(model.id, {"ids": ["fire.ids"], "includeOverrides": True})
    assert changed["checkId"] != with_overrides["checkId"]
    assert [f["guid"] for f in changed["result"]["specifications"][0]["failures"]] == [WALL_GUIDS["A"], WALL_GUIDS["C"]]


def test_overrides_of_classification_and_shared_property_sets(make_model, tmp_path):
    """Overrides land on the overridden element only, also where it shares a property set or classification."""
    import ifcopenshell
    import ifcopenshell.api.classification
    import ifcopenshell.api.pset
    import ifcopenshell.util.classification
    import ifcopenshell.util.element

    from checks_app.engine.overrides import apply_overrides

    ifc = ifcopenshell.open(str(write_walls_ifc(tmp_path / "w.ifc")))
    a, b = ifc.by_guid(WALL_GUIDS["A"]), ifc.by_guid(WALL_GUIDS["B"])
    shared = ifcopenshell.api.pset.add_pset(ifc, product=a, name="Pset_WallCommon")
    ifcopenshell.api.pset.edit_pset(ifc, pset=shared, properties={"FireRating": "REI30", "Comments": "old"})
    ifcopenshell.api.pset.assign_pset(ifc, products=[b], pset=shared)
    system = ifcopenshell.api.classification.add_classification(ifc, classification="Uniclass")
    ifcopenshell.api.classification.add_reference(ifc, products=[a, b], identification="EF_25", name="Walls", classification=system)

    applied = apply_overrides(ifc, {WALL_GUIDS["A"]: {"FireRating": "REI120", "Classification": "EF_25_10", "Description": "x"}})
    assert applied == {"elements": 1, "fields": 3, "missing": [], "failed": []}
    assert ifcopenshell.util.element.get_pset(a, "Pset_WallCommon") | {"id": 0} == {"FireRating": "REI120", "Comments": "old", "id": 0}
    assert ifcopenshell.util.element.get_pset(b, "Pset_WallCommon")["FireRating"] == "REI30"
    assert {r.Identification for r in ifcopenshell.util.classification.get_references(a)} == {"EF_25_10"}
    assert {r.Identification for r in ifcopenshell.util.classification.get_references(b)} == {"EF_25"}
    assert a.Description == "x" and b.Description is None


def test_a_failed_check_shows_its_error(api, make_model, put_ids, start_check):
    model = make_model(sample("KIT-Simple-Road-Test-Web-IFC4x3_RC2.ifc"))
    put_ids("fire.ids", fire_ids())
    check = start_check(model.id, {"ids": ["fire.ids"]})
    assert check["status"] == "failed" and check["result"] is None
    assert "Unsupported schema" in check["error"] and "IFC4X3_RC2" in check["error"]
    for report in ("report.html", "report.bcfzip", "issues"):
        method = api.post if report == "issues" else api.get
        response = method(f"/api/v1/models/{model.id}/checks/{check['checkId']}/{report}")
        assert (response.status_code, response.json()["code"]) == (409, 40900) and "Unsupported schema" in response.json()["message"]
    retried = start_check(model.id, {"ids": ["fire.ids"]}, run=False)
    assert retried["checkId"] != check["checkId"] and retried["status"] == "queued"  # failures are not cached


def test_an_ids_ifctester_cannot_read_fails_its_check_for_good(api, make_model, project, start_check):
    """Uploads are validated against the XSD only (libxml2): a document ifctester cannot read all the same (here one
    stored as it is, as an earlier version could have) fails its check with the upload's words, and the same request
    is answered by that failure."""
    content = fire_ids().decode().replace("<specifications>", "<specifications><specification/>")
    document = IdsDocument.objects.create(sha256=hashlib.sha256(content.encode()).hexdigest(), content=content, size=len(content), specifications=2)
    IdsFile.objects.create(project=project, name="broken.ids", document=document)
    model = make_model()
    check = start_check(model.id, {"ids": ["broken.ids"]})
    assert check["status"] == "failed" and check["result"] is None
    assert "the IDS file broken.ids cannot be read: IdsXmlValidationError" in check["error"], check["error"]
    again = start_check(model.id, {"ids": ["broken.ids"]}, run=False)
    assert (again["checkId"], again["cached"]) == (check["checkId"], True)


def test_bad_inputs(api, make_model, put_ids, project):
    model = make_model()
    put_ids("fire.ids", fire_ids())
    url = f"/api/v1/models/{model.id}/checks"

    def post(body):
        uploads = isinstance(body.get("ids"), list) and body["ids"] and hasattr(body["ids"][0], "read")
        response = api.post(url, body, format="multipart" if uploads else "json")
        return response.status_code, response.json()["code"], response.json()["message"]

    assert post({"ids": ["nope.ids"]})[1] == 40400
    assert post({"ids": ["../fire.ids"]})[1] == 40400
    assert post({"ids": []})[1] == 40001
    assert post({})[1] == 40001
    assert post({"ids": "fire.ids"})[1] == 40001
    assert post({"ids": ["fire.ids"], "version": "latest"})[:2] == (400, 40001)
    assert post({"ids": ["fire.ids"], "version": "v0"})[1] == 40001
    assert post({"ids": ["fire.ids", "fire.ids"]})[1] == 40001
    assert post({"ids": [f"f{i}.ids" for i in range(11)]})[1] == 40001
    assert post({"ids": [SimpleUploadedFile("bad.ids", b"<ids/>")]})[1] == 40001
    assert "bad.ids" in post({"ids": [SimpleUploadedFile("bad.ids", fire_ids().replace(b"<info>", b"<info><x/>"))]})[2]
    big = SimpleUploadedFile("big.ids", fire_ids().replace(b"<specifications>", b"<!--" + b"x" * (5 * 1024 * 1024) + b"--><specifications>"))
    assert post({"ids": [big]})[:2] == (400, 40002)
    assert api.post(url, "not json", content_type="application/json").json()["code"] == 40001

    assert api.post("/api/v1/models/m_0000000000000000/checks", {"ids": ["fire.ids"]}, format="json").json()["code"] == 40400
    assert api.post("/api/v1/models/..%2Fetc/checks", {"ids": ["fire.ids"]}, format="json").json()["code"] == 40400
    assert api.get("/api/v1/models/m_0000000000000000/checks").json()["code"] == 40400
    for check_id in ("chk_0000000000000000", "chk_x", "..", "%2e%2e"):
        assert api.get(f"{url}/{check_id}").json()["code"] == 40400
        assert api.get(f"{url}/{check_id}/report.html").json()["code"] == 40400
    assert Check.objects.count() == 0

    orphan = make_model(in_project=False)
    response = api.post(f"/api/v1/models/{orphan.id}/checks", {"ids": ["fire.ids"]}, format="json").json()
    assert response["code"] == 40001 and "belongs to no project" in response["message"]
    (model_dir(model.id) / "model.ifc").unlink()
    response = api.post(url, {"ids": ["fire.ids"]}, format="json").json()
    assert response["code"] == 40400 and "no IFC" in response["message"]


def test_a_drawing_cannot_be_checked(api, make_model, put_ids):
    model = make_model()
    model.format = "dxf"
    model.save()
    put_ids("fire.ids", fire_ids())
    response = api.post(f"/api/v1/models/{model.id}/checks", {"ids": ["fire.ids"]}, format="json").json()
    assert response["code"] == 40001 and "DXF" in response["message"]


def test_a_version_needs_the_edit_service(api, make_model, put_ids, viewer_config):
    viewer_config(editServiceURL="http://127.0.0.1:9")  # nothing listens: 50200, nothing queued
    model = make_model()
    put_ids("fire.ids", fire_ids())
    response = api.post(f"/api/v1/models/{model.id}/checks", {"ids": ["fire.ids"], "version": "v1"}, format="json")
    assert (response.status_code, response.json()["code"]) == (502, 50200)
    assert Check.objects.count() == 0


def test_interrupted_checks_are_queued_again_and_fail_after_three_attempts(make_model, put_ids, api, run_checks):
    model = make_model()
    put_ids("fire.ids", fire_ids())
    check_id = api.post(f"/api/v1/models/{model.id}/checks", {"ids": ["fire.ids"]}, format="json").json()["data"]["checkId"]
    dead = "otherhost:12345:1"  # another host whose heartbeat stopped long ago
    Check.objects.filter(pk=check_id).update(status="running", worker=dead, heartbeat_at=timezone.now() - timezone.timedelta(hours=1), attempts=1)
    assert services.recover_interrupted_checks() == [check_id]
    assert Check.objects.get(pk=check_id).status == "queued"
    assert run_checks() == [check_id] and Check.objects.get(pk=check_id).status == "done"

    alive = Check.objects.create(model=model, version="current", product_key="x", ids=[], cache_key="y", status="running",
                                 worker=dead, heartbeat_at=timezone.now(), attempts=1)
    assert services.recover_interrupted_checks() == []  # a fresh heartbeat elsewhere: still running
    Check.objects.filter(pk=alive.pk).update(heartbeat_at=timezone.now() - timezone.timedelta(hours=1), attempts=3)
    assert services.recover_interrupted_checks() == []
    alive.refresh_from_db()
    assert alive.status == "failed" and "died 3 times" in alive.error


def test_failures_explain_and_check_get_for_the_agent(api, make_model, put_ids, start_check):
    model = make_model(fire_ratings={"A": "REI60"})
    put_ids("fire.ids", fire_ids())
    check = start_check(model.id, {"ids": ["fire.ids"]})
    explained = services.failures_explain(model_id=model.id, check_id=check["checkId"])
    assert explained["status"] == "done" and explained["summary"]["failed"] == 1
    (failing,) = explained["failing"]
    assert (failing["specification"], failing["failedElements"], failing["instructions"]) == ("Walls have a fire rating", 2, "Set Pset_WallCommon.FireRating")
    assert "0 of 1 specifications pass" in explained["text"] and "2 of 3 elements fail" in explained["text"]
    assert len(json.dumps(explained)) < 4000
    assert services.check_get(model_id=model.id, check_id=check["checkId"])["result"] == check["result"]
