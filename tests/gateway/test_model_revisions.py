"""Revisions of an uploaded model (POST/GET /api/v1/models/{id}/revisions; an extension of the spec): the model keeps
its id and its records, every revision's file is kept, the new one is converted like an upload, and the edit proxy's
versions list and semantic diff work between revisions by GlobalId. The gateway runs in-process (test client, real
SQLite), the edit service is a real process on the same data directory (it snapshots the stored revisions in its
sandbox), and conversions run here as a worker runs them: the real confined pipeline."""

from __future__ import annotations

import json

import ifcopenshell
import ifcopenshell.api.root
import ifcopenshell.api.spatial
import pytest
from django.conf import settings
from django.contrib.admin.utils import quote
from django.core.files.uploadedfile import SimpleUploadedFile
from django_tasks_db.models import DBTaskResult

from checks_app import services as check_services
from checks_app.models import Check
from models_app import services, trash_services, version_geometry
from models_app.models import IfcModel, ModelRevision
from models_app.storage import model_dir, trashed_model_dir
from api.principal import Principal
from tests.edit_service.test_api import EditService
from tests.helpers import MINIMAL_IFC, sample
from tests.checks.conftest import EXAMPLE_IDS
from viewer_gateway.server import body_limit

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

RENAMED = "3xUPAVO39FGgNkCUQqf4JV"  # North wall
REMOVED = "2W4bl$KK1Brv_UEOkAThqU"  # Footing
ADDED = "1kTvXnbbzCWw8lcMd1dR4o"  # a new proxy in the storey


@pytest.fixture(scope="module")
def edit_service():
    running = EditService(settings.DATA_DIR).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def revision_files() -> tuple[bytes, bytes]:
    """v1: the IfcOpenHouse sample as ifcopenshell writes it; v2: the same with the north wall renamed, the footing
    removed and a proxy added."""
    house = ifcopenshell.open(str(sample("IfcOpenHouse_IFC4.ifc")))
    first = house.to_string().encode()
    house.by_guid(RENAMED).Name = "North wall, rendered"
    ifcopenshell.api.root.remove_product(house, product=house.by_guid(REMOVED))
    proxy = ifcopenshell.api.root.create_entity(house, ifc_class="IfcBuildingElementProxy", name="Rain tank")
    proxy.GlobalId = ADDED
    ifcopenshell.api.spatial.assign_container(house, products=[proxy], relating_structure=house.by_type("IfcBuildingStorey")[0])
    return first, house.to_string().encode()


@pytest.fixture
def gateway(viewer_config, edit_service):
    viewer_config(editServiceURL=edit_service.url)


def data(response):
    body = response.json()
    assert body["code"] == 0, body
    return body["data"]


def error(response) -> tuple[int, int]:
    return response.status_code, response.json()["code"]


def upload(api, name: str, content: bytes):
    return api.post("/api/v1/models", {"file": SimpleUploadedFile(name, content)}, format="multipart")


def upload_revision(api, model_id: str, name: str, content: bytes):
    return api.post(f"/api/v1/models/{model_id}/revisions", {"file": SimpleUploadedFile(name, content)}, format="multipart")


def conversion_tasks(model_id: str) -> int:
    return sum(r.args_kwargs["args"] == ["conversion", model_id] for r in DBTaskResult.objects.ready())


def diff(api, model_id: str, base: str, target: str):
    return api.post(f"/api/v1/models/{model_id}/edit/diff", {"base": base, "target": target}, format="json")


@pytest.fixture
def uploaded(api, gateway, revision_files):
    """An uploaded, converted model (v1) with an issue on the wall that the next revision renames."""
    first, _ = revision_files
    model_id = data(upload(api, "house-week1.ifc", first))["id"]
    services.run_conversion(model_id)
    assert IfcModel.objects.get(pk=model_id).status == "ready"
    issue = {"entityId": RENAMED, "entityName": "North wall", "entityType": "IfcWallStandardCase", "title": "Render it"}
    assert data(api.post(f"/api/v1/models/{model_id}/issues", {"issue": json.dumps(issue)}, format="multipart"))
    return model_id


def test_a_revision_keeps_the_model_and_diffs_against_the_earlier_one_by_globalid(api, uploaded, revision_files):
    first, second = revision_files
    model_id = uploaded
    assert data(api.get(f"/api/v1/models/{model_id}/edit/versions")) == {"versions": [], "current": None}  # no revisions yet

    answer = data(upload_revision(api, model_id, "house-week2.ifc", second))
    assert (answer["id"], answer["status"], answer["size"]) == (model_id, "converting", len(second))
    assert answer["revision"]["version"] == "v2" and answer["revision"]["fileName"] == "house-week2.ifc"
    assert [m["id"] for m in data(api.get("/api/v1/models"))] == [model_id]
    folder = model_dir(model_id)
    assert (folder / "revisions" / "v1.ifc").read_bytes() == first
    assert (folder / "revisions" / "v2.ifc").read_bytes() == second == (folder / "model.ifc").read_bytes()

    services.run_conversion(model_id)  # converted like an upload
    assert IfcModel.objects.get(pk=model_id).status == "ready"
    metadata_ids = {o["id"] for o in json.loads((folder / "metadata.json").read_text())["metaObjects"]}
    assert ADDED in metadata_ids and REMOVED not in metadata_ids

    versions = data(api.get(f"/api/v1/models/{model_id}/edit/versions"))
    assert versions["current"] == "v2"
    assert [(v["version"], v["fileName"], v["size"], v["author"]) for v in versions["versions"]] == [
        ("v1", "house-week1.ifc", len(first), ""), ("v2", "house-week2.ifc", len(second), "local-user"),
    ]
    assert all(v["createdAt"].endswith("Z") for v in versions["versions"])
    assert [r["version"] for r in data(api.get(f"/api/v1/models/{model_id}/revisions"))] == ["v1", "v2"]

    expected = {
        "added": [ADDED],
        "removed": [REMOVED],
        "changed": [{"guid": RENAMED, "changes": [{"field": "Name", "old": "North wall", "new": "North wall, rendered"}]}],
    }
    between = data(diff(api, model_id, "v1", "v2"))
    assert {k: between[k] for k in expected} == expected and between["base"] == "v1" and between["target"] == "v2"
    assert between["labels"][ADDED] == "Rain tank (IfcBuildingElementProxy)"
    against_current = data(diff(api, model_id, "v1", "current"))
    assert {k: against_current[k] for k in expected} == expected and against_current["target"] == "current"
    assert len(list((folder / "script" / "cache").glob("revision-diff-v1-v2.*.json"))) == 1  # immutable revisions: cached
    assert data(diff(api, model_id, "v2", "v2"))["changed"] == []

    [issue] = data(api.get(f"/api/v1/models/{model_id}/issues"))
    assert issue["entityId"] == RENAMED and issue["title"] == "Render it"


def test_the_removed_elements_of_a_revision_get_their_geometry_from_its_stored_file(api, uploaded, revision_files):
    model_id = uploaded
    data(upload_revision(api, model_id, "house-week2.ifc", revision_files[1]))
    url = f"/api/v1/models/{model_id}/versions/v1/geometry"
    assert data(api.post(url))["status"] == "queued"
    version_geometry.run_version_conversion(model_id, "v1")
    assert data(api.get(url))["status"] == "ready"
    metadata = json.loads(b"".join(api.get(f"/v1/models/{model_id}/versions/v1/metadata.json").streaming_content))
    assert REMOVED in {o["id"] for o in metadata["metaObjects"]}
    assert error(api.post(f"/api/v1/models/{model_id}/versions/v7/geometry")) == (404, 40400)


def test_a_script_taking_over_the_model_does_not_inherit_the_revisions_geometry(api, uploaded, revision_files):
    """Revisions and script versions are both numbered v1, v2, ...: after a script took the model over, its v1 is not
    the uploaded v1 whose geometry was converted before."""
    model_id = uploaded
    data(upload_revision(api, model_id, "house-week2.ifc", revision_files[1]))
    url = f"/api/v1/models/{model_id}/versions/v1/geometry"
    data(api.post(url))
    version_geometry.run_version_conversion(model_id, "v1")
    assert data(api.get(url))["status"] == "ready"

    script = 'import script_lib as sl\n\nPARAMS = {}\n\n\ndef build(params, out_path):\n    sl.save(sl.new_model("X"), out_path)\n'
    assert data(api.put(f"/api/v1/models/{model_id}/script", {"script": script}, format="json"))
    data(api.post(f"/api/v1/models/{model_id}/script/run", format="json"))
    assert data(api.post(f"/api/v1/models/{model_id}/script/save", {"note": "scripted"}, format="json"))["version"] == "v1"

    assert error(api.get(f"/v1/models/{model_id}/versions/v1/metadata.json")) == (404, 40400)  # not the revision's
    assert data(api.post(url))["status"] == "queued"
    version_geometry.run_version_conversion(model_id, "v1")
    assert data(api.get(url))["status"] == "ready"
    metadata = json.loads(b"".join(api.get(f"/v1/models/{model_id}/versions/v1/metadata.json").streaming_content))
    assert REMOVED not in {o["id"] for o in metadata["metaObjects"]} and RENAMED not in {o["id"] for o in metadata["metaObjects"]}


def test_an_ids_check_runs_on_an_earlier_revision(api, uploaded, revision_files):
    """The checks panel offers the versions edit/versions lists, which are the revisions of an uploaded model."""
    model_id = uploaded
    data(upload_revision(api, model_id, "house-week2.ifc", revision_files[1]))
    started = {}
    for version in ("v1", "v2"):
        response = api.post(f"/api/v1/models/{model_id}/checks", {"ids": SimpleUploadedFile("basics.ids", EXAMPLE_IDS.read_bytes()), "version": version}, format="multipart")
        started[version] = data(response)["checkId"]
    for check_id in started.values():
        check_services.check_run(check_id)
    checks = {version: Check.objects.get(pk=check_id) for version, check_id in started.items()}
    assert {version: (check.status, check.product_key) for version, check in checks.items()} == {"v1": ("done", "revision:v1"), "v2": ("done", "revision:v2")}
    assert error(api.post(f"/api/v1/models/{model_id}/checks", {"ids": SimpleUploadedFile("basics.ids", EXAMPLE_IDS.read_bytes()), "version": "v3"}, format="multipart")) == (404, 40400)


def test_unknown_or_malformed_versions_are_refused(api, uploaded, revision_files):
    model_id = uploaded
    data(upload_revision(api, model_id, "house-week2.ifc", revision_files[1]))
    assert error(diff(api, model_id, "v1", "v9")) == (404, 40400)
    assert error(diff(api, model_id, "v0", "v2")) == (404, 40400)
    assert error(diff(api, model_id, "current", "v2")) == (400, 40001)
    assert error(diff(api, model_id, "v1", "latest")) == (400, 40001)
    assert error(diff(api, model_id, "v1\n", "v2")) == (400, 40001)
    long = diff(api, model_id, "v" * 100_000, "v2")
    assert error(long) == (400, 40001) and len(long.json()["message"]) < 200
    assert error(api.post(f"/api/v1/models/{model_id}/edit/diff", {"base": "v1"}, format="json")) == (400, 40001)
    assert error(upload_revision(api, "m_0123456789abcdef", "x.ifc", MINIMAL_IFC)) == (404, 40400)


def test_a_script_built_model_gets_no_uploaded_revisions(api, gateway, revision_files):
    born = services.model_create_for_script(name="scripted.ifc")
    assert error(upload_revision(api, born.id, "house.ifc", revision_files[0])) == (409, 40900)

    taken_over = data(upload(api, "house.ifc", revision_files[0]))["id"]  # an upload a script then took over
    script = 'import script_lib as sl\n\nPARAMS = {}\n\n\ndef build(params, out_path):\n    sl.save(sl.new_model("X"), out_path)\n'
    assert data(api.put(f"/api/v1/models/{taken_over}/script", {"script": script}, format="json"))
    response = upload_revision(api, taken_over, "house.ifc", revision_files[1])
    assert error(response) == (409, 40900) and "saving its script" in response.json()["message"]
    assert not ModelRevision.objects.exists() and not (model_dir(taken_over) / "revisions").exists()


@pytest.mark.parametrize(
    "name, content, code",
    [("plan.dwg", MINIMAL_IFC, 40001), ("fake.ifc", b"PK\x03\x04 a zip", 40001), ("empty.ifc", b"", 40001), ("big.ifc", MINIMAL_IFC + b"x" * 600_000, 40002)],
)
def test_a_bad_revision_is_refused_and_changes_nothing(api, gateway, viewer_config, revision_files, name, content, code):
    first = revision_files[0]
    model_id = data(upload(api, "house.ifc", first))["id"]
    services.run_conversion(model_id)
    viewer_config(maxUploadMB=0.5)
    tasks = conversion_tasks(model_id)
    assert error(upload_revision(api, model_id, name, content)) == (400, code)
    model = IfcModel.objects.get(pk=model_id)
    assert (model.status, model.size) == ("ready", len(first))
    assert (model_dir(model_id) / "model.ifc").read_bytes() == first
    assert not (model_dir(model_id) / "revisions").exists() and not ModelRevision.objects.exists()
    assert conversion_tasks(model_id) == tasks
    assert data(api.get(f"/api/v1/models/{model_id}/edit/versions")) == {"versions": [], "current": None}


def test_a_revision_uploaded_while_converting_is_merged_into_that_conversion(api, gateway, revision_files):
    first, second = revision_files
    model_id = data(upload(api, "house.ifc", first))["id"]  # queued, not yet converted
    answer = data(upload_revision(api, model_id, "house-week2.ifc", second))
    assert answer["status"] == "converting" and conversion_tasks(model_id) == 1
    services.run_conversion(model_id)
    model = IfcModel.objects.get(pk=model_id)
    assert (model.status, model.size) == ("ready", len(second))
    assert ADDED in (model_dir(model_id) / "metadata.json").read_text()


def test_revisions_go_to_the_trash_with_the_model_and_are_purged_with_it(api, gateway, revision_files, admin_client, admin_user):
    api.force_login(admin_user)  # the admin's first user turns accounts on: the API then needs a sign-in
    model_id = data(upload(api, "house.ifc", revision_files[0]))["id"]
    data(upload_revision(api, model_id, "house-week2.ifc", revision_files[1]))
    page = admin_client.get(f"/admin/models_app/ifcmodel/{quote(model_id)}/change/").content.decode()
    assert "house-week2.ifc" in page and "v2" in page

    assert data(api.delete(f"/api/v1/models/{model_id}")) is None
    assert (trashed_model_dir(model_id) / "revisions" / "v2.ifc").is_file() and not model_dir(model_id).exists()
    assert error(api.get(f"/api/v1/models/{model_id}/revisions")) == (404, 40400)
    data(api.post(f"/api/v1/trash/{model_id}/restore"))
    assert [r["version"] for r in data(api.get(f"/api/v1/models/{model_id}/revisions"))] == ["v1", "v2"]

    trash_services.model_trash(model_id, by=Principal("test"))
    trash_services.trash_purge(model_id, by=Principal("test"))
    assert not ModelRevision.with_trashed.filter(model_id=model_id).exists()
    assert not trashed_model_dir(model_id).exists() and not model_dir(model_id).exists()


def test_the_edge_lets_a_revision_as_large_as_an_upload_through():
    """The body limit is decided by the server before Django reads a byte: a revision route without its own limit got
    the 10 MB default, so a revision the upload accepts (maxUploadMB) was refused."""
    upload = body_limit("POST", "/api/v1/models")
    assert upload > settings.VIEWER.max_upload_bytes
    assert body_limit("POST", "/api/v1/models/m_0123456789abcdef/revisions") == upload
