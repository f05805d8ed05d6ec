"""Models in a project (upload into one, add, re-discipline, take out; a project without its skeleton) and the
federation: each model placed in the project frame by its own georeference, so that two models of one building
whose local origins differ but whose map conversions agree line up to the millimetre."""

from __future__ import annotations

import json
import os
from pathlib import Path

import ifcopenshell
import ifcopenshell.api
import ifcopenshell.geom
import numpy as np
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts_app.models import AuditEvent, ProjectMember
from models_app import services
from models_app.conversion.georeference import georeference, helmert_matrix, matrix_of
from models_app.federation import project_placements
from models_app.models import IfcModel, ModelRevision, Project, ProjectModel
from models_app.project_services import PROJECT_FILE
from models_app.selectors import model_current_version
from models_app.storage import model_dir
from tests.accounts.people import error, person, post, signed_in
from tests.helpers import MINIMAL_IFC, ok, sample

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

MAP_A = {"Eastings": 500000.0, "Northings": 5400000.0, "OrthogonalHeight": 100.0}
# model B: millimetres, its x axis pointing north on the map, its origin elsewhere; the box lands where A's does
MAP_B = {"Eastings": 500007.0, "Northings": 5400015.0, "OrthogonalHeight": 100.0, "XAxisAbscissa": 0.0, "XAxisOrdinate": 1.0, "Scale": 0.001}
TURNED = np.array([[0, 1, 0, 0], [-1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=float)  # -90 degrees about z
BOX_ON_MAP = np.array([[500010, 5400020, 100], [500012, 5400021, 103]], dtype=float)  # min and max corner


# --- generated models ------------------------------------------------------------------------------------------


def placed(matrix: np.ndarray, origin) -> np.ndarray:
    result = np.array(matrix, dtype=float)
    result[:3, 3] = origin
    return result


def box_model(schema: str = "IFC4", unit: str = "METERS", placement: np.ndarray | None = None, conversion: dict | None = None,
              crs: dict | None = None, size=(2.0, 1.0, 3.0), conversion_class: str = "IfcMapConversion"):
    """An IFC with one box element (a proxy, size x, y, z in metres) at `placement` (4x4, metres) in a site, the
    project in `unit`, and optionally a map conversion (IFC4+: IfcMapConversion + IfcProjectedCRS)."""
    run = ifcopenshell.api.run
    ifc = run("project.create_file", version=schema)
    if schema == "IFC2X3":  # its owner history is mandatory: an author and an application to write it
        organisation = ifc.createIfcOrganization(Name="Tests")
        ifc.createIfcPersonAndOrganization(ifc.createIfcPerson(FamilyName="Tester"), organisation)
        ifc.createIfcApplication(organisation, "1", "tests", "tests")
    project = run("root.create_entity", ifc, ifc_class="IfcProject", name="Federated")
    run("unit.assign_unit", ifc, length={"is_metric": True, "raw": unit})
    model = run("context.add_context", ifc, context_type="Model")
    body = run("context.add_context", ifc, context_type="Model", context_identifier="Body", target_view="MODEL_VIEW", parent=model)
    site = run("root.create_entity", ifc, ifc_class="IfcSite", name="Site")
    run("aggregate.assign_object", ifc, products=[site], relating_object=project)
    box = run("root.create_entity", ifc, ifc_class="IfcBuildingElementProxy", name="Box")
    run("spatial.assign_container", ifc, products=[box], relating_structure=site)
    representation = run("geometry.add_wall_representation", ifc, context=body, length=size[0], height=size[2], thickness=size[1])
    run("geometry.assign_representation", ifc, product=box, representation=representation)
    in_units = np.array(placement if placement is not None else np.eye(4), dtype=float)
    in_units[:3, 3] /= 0.001 if unit == "MILLIMETERS" else 1.0
    run("geometry.edit_object_placement", ifc, product=box, matrix=in_units, is_si=False)
    if conversion is not None:
        run("georeference.add_georeferencing", ifc, ifc_class=conversion_class)
        run("georeference.edit_georeferencing", ifc, projected_crs=crs or {"Name": "EPSG:25832"}, coordinate_operation=conversion)
    return ifc


def box_vertices(ifc) -> np.ndarray:
    """The box's vertices in the model's IFC world frame, metres (as the conversion meshes it)."""
    shape_settings = ifcopenshell.geom.settings()
    shape_settings.set("use-world-coords", True)
    shape = ifcopenshell.geom.create_shape(shape_settings, ifc.by_type("IfcBuildingElementProxy")[0])
    return np.array(shape.geometry.verts, dtype=float).reshape(-1, 3)


def transformed(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    return (matrix @ np.c_[points, np.ones(len(points))].T).T[:, :3]


def corners(points: np.ndarray) -> np.ndarray:
    return np.array([points.min(axis=0), points.max(axis=0)])


def model_a():
    return box_model(placement=placed(np.eye(4), (10, 20, 0)), conversion=MAP_A)


def model_b():
    return box_model(unit="MILLIMETERS", placement=placed(TURNED, (5, -3, 0)), conversion=MAP_B)


# --- API helpers -----------------------------------------------------------------------------------------------


def upload(client, content: bytes = MINIMAL_IFC, name: str = "tiny.ifc", **fields):
    return client.post("/api/v1/models", {"file": SimpleUploadedFile(name, content), **fields}, format="multipart")


def upload_ifc(client, ifc, name: str, **fields) -> str:
    return ok(upload(client, ifc.to_string().encode(), name, **fields))["id"]


def new_project(api, **fields) -> str:
    return ok(api.post("/api/v1/chat/projects", {"kind": "ifc", "skeleton": False, **fields}, format="json"))["projectId"]


def project_of(api, project_id: str) -> dict:
    return ok(api.get(f"/api/v1/chat/projects/{project_id}"))


def leftovers() -> list[str]:
    return sorted(os.listdir(settings.MODELS_DIR)) + sorted(os.listdir(settings.UPLOAD_TMP_DIR))


def model_path(project_id: str, model_id: str) -> str:
    return f"/api/v1/projects/{project_id}/models/{model_id}"


# --- projects without a skeleton, models in a project ----------------------------------------------------------


def test_a_project_for_uploads_starts_without_its_skeleton_and_is_read_back(api):
    project_id = new_project(api, title="Tower")
    project = project_of(api, project_id)
    assert (project["title"], project["kind"], project["models"], project["modelDetails"]) == ("Tower", "ifc", [], [])
    assert IfcModel.objects.count() == 0
    response = api.post("/api/v1/chat/projects", {"kind": "ifc", "skeleton": "no"}, format="json")
    assert "skeleton" in error(response, 400, 40001) and Project.objects.count() == 1
    assert error(api.get("/api/v1/chat/projects/p_0000000000000000"), 404, 40400)


def test_an_upload_into_a_project_joins_it_with_its_discipline(api):
    project_id = new_project(api)
    model = ok(upload(api, projectId=project_id, discipline="ARC"))
    assert model["status"] == "converting"
    project = project_of(api, project_id)
    assert project["models"] == [model["id"]]
    assert project["modelDetails"] == [{"modelId": model["id"], "discipline": "ARC", "version": "v1", "status": "converting"}]
    assert (model_dir(model["id"]) / PROJECT_FILE).read_text() == project_id


@pytest.mark.parametrize("fields, field", [
    ({"projectId": "p_0000000000000000"}, "projectId"),
    ({"projectId": "not-a-project"}, "projectId"),
    ({"projectId": "PROJECT", "discipline": "ARC"}, "projectId"),
    ({"discipline": "ARC"}, "discipline"),
])
def test_an_upload_into_no_project_is_refused_and_leaves_nothing(api, fields, field):
    assert error(upload(api, **fields), 400, 40001).startswith(f"{field}:")
    assert IfcModel.objects.count() == 0 and ProjectModel.objects.count() == 0 and leftovers() == []


def test_an_upload_with_a_discipline_too_long_is_refused(api):
    project_id = new_project(api)
    assert error(upload(api, projectId=project_id, discipline="X" * 33), 400, 40001).startswith("discipline:")
    assert IfcModel.objects.count() == 0 and leftovers() == []


def test_an_upload_into_a_project_failing_late_leaves_neither_record_nor_link_nor_files(api, monkeypatch):
    project_id = new_project(api)

    def broken_queue(model):
        raise RuntimeError("the queue is down")

    monkeypatch.setattr(services, "queue_conversion", broken_queue)
    assert upload(api, projectId=project_id).status_code == 500
    assert IfcModel.objects.count() == 0 and ProjectModel.objects.count() == 0 and leftovers() == []


def test_a_model_is_added_re_disciplined_and_taken_out_and_stays(api):
    project_id = new_project(api)
    first = ok(upload(api, projectId=project_id, discipline="ARC"))["id"]
    loose = ok(upload(api))["id"]
    project = ok(api.put(model_path(project_id, loose), {"discipline": "STR"}, format="json"))
    assert project["models"] == [first, loose]
    assert [(m["modelId"], m["discipline"]) for m in project["modelDetails"]] == [(first, "ARC"), (loose, "STR")]
    assert (model_dir(loose) / PROJECT_FILE).read_text() == project_id
    ok(api.put(model_path(project_id, loose), {"discipline": "MEP"}, format="json"))
    kept = ok(api.put(model_path(project_id, loose), format="json"))  # no body: the discipline stays
    assert kept["modelDetails"][1]["discipline"] == "MEP"
    project = ok(api.delete(model_path(project_id, loose)))
    assert project["models"] == [first] and not (model_dir(loose) / PROJECT_FILE).exists()
    assert ok(api.get(f"/api/v1/models/{loose}"))["id"] == loose
    assert error(api.delete(model_path(project_id, loose)), 404, 40400)
    readded = ok(api.put(model_path(project_id, loose), {}, format="json"))
    assert readded["modelDetails"][1] == {"modelId": loose, "discipline": "", "version": "v1", "status": "converting"}


def test_bad_puts_answer_the_documented_errors(api):
    tower, hall = new_project(api), new_project(api)
    model_id = ok(upload(api, projectId=hall, discipline="ARC"))["id"]
    message = error(api.put(model_path(tower, model_id), {"discipline": "ARC"}, format="json"), 409, 40900)
    assert model_id in message and hall in message
    assert ProjectModel.objects.get(model_id=model_id).project_id == hall
    assert error(api.put(model_path(hall, model_id), {"discipline": 7}, format="json"), 400, 40001).startswith("discipline:")
    assert error(api.put(model_path(hall, model_id), {"discipline": "X" * 33}, format="json"), 400, 40001).startswith("discipline:")
    assert error(api.put(model_path(hall, model_id), [1], format="json"), 400, 40001)
    assert error(api.put(model_path("p_0000000000000000", model_id), {}, format="json"), 404, 40400)
    assert error(api.put(model_path(tower, "m_0000000000000000"), {}, format="json"), 404, 40400)
    assert error(api.delete(model_path(tower, model_id)), 404, 40400)  # it is hall's
    assert ProjectModel.objects.get(model_id=model_id).discipline == "ARC"


def test_the_current_version_is_the_last_revision_or_the_last_saved_script_version(api):
    model_id = ok(upload(api))["id"]
    assert model_current_version(model_id) == "v1"
    model = IfcModel.objects.get(pk=model_id)
    for number in (1, 2):
        ModelRevision.objects.create(model=model, number=number, name="a.ifc", size=1, uploaded_at=model.created_at)
    assert model_current_version(model_id) == "v2"
    versions = model_dir(model_id) / "script" / "versions"
    versions.mkdir(parents=True)
    for name in ("v3.json", "v3.ifc", "v4.json", "v4.ifc"):
        (versions / name).write_text("{}")
    assert model_current_version(model_id) == "v4"  # a script took the model over


# --- roles -----------------------------------------------------------------------------------------------------


@pytest.fixture
def team():
    """Project Tower with its owner, an editor and a viewer; and an outsider."""
    project = Project.objects.create(title="Tower", kind="ifc")
    people = {role: person(name) for role, name in (("owner", "olga"), ("editor", "ed"), ("viewer", "vic"), ("outsider", "otto"))}
    for role in ("owner", "editor", "viewer"):
        ProjectMember.objects.create(project=project, user=people[role], role=role)
    return project, {role: signed_in(user) for role, user in people.items()}, people


def test_only_editors_upload_into_a_project(team):
    project, clients, _ = team
    assert error(upload(clients["viewer"], projectId=project.id), 403, 40300)
    assert error(upload(clients["outsider"], projectId=project.id), 404, 40400)  # not told the project exists
    assert IfcModel.objects.count() == 0 and leftovers() == []
    model_id = ok(upload(clients["editor"], projectId=project.id, discipline="STR"))["id"]
    assert ok(clients["viewer"].get(f"/api/v1/chat/projects/{project.id}"))["modelDetails"][0]["discipline"] == "STR"
    assert AuditEvent.objects.filter(action="model.upload", object=f"model:{model_id}", project_id=project.id).exists()


def test_putting_a_model_needs_its_owner_and_edit_on_the_project(team):
    project, clients, people = team
    own = {role: ok(upload(clients[role]))["id"] for role in ("editor", "viewer", "outsider")}
    assert error(post(clients["viewer"], model_path(project.id, own["viewer"]), {"discipline": "MEP"}, "put"), 403, 40300)
    assert error(post(clients["outsider"], model_path(project.id, own["outsider"]), {}, "put"), 404, 40400)
    assert error(post(clients["editor"], model_path(project.id, own["outsider"]), {}, "put"), 404, 40400)  # not its model
    assert ProjectModel.objects.count() == 0
    ok(post(clients["editor"], model_path(project.id, own["editor"]), {"discipline": "MEP"}, "put"))
    # in the project the model is the project's: changing its discipline needs the project's owner (the route)
    assert error(post(clients["editor"], model_path(project.id, own["editor"]), {"discipline": "ARC"}, "put"), 403, 40300)
    assert ok(post(clients["owner"], model_path(project.id, own["editor"]), {"discipline": "ARC"}, "put"))["modelDetails"][0]["discipline"] == "ARC"
    assert AuditEvent.objects.filter(action="project.model-put", project_id=project.id).count() == 2


def test_taking_a_model_out_needs_edit_and_gives_it_back_to_its_uploader(team):
    project, clients, people = team
    uploaded = ok(upload(clients["editor"], projectId=project.id))["id"]
    built = IfcModel.objects.create(name="skeleton.ifc", status="ready")  # made by the project's agent: no uploader
    ProjectModel.objects.create(project=project, model=built)
    assert error(clients["viewer"].delete(model_path(project.id, uploaded)), 403, 40300)
    assert error(clients["outsider"].delete(model_path(project.id, uploaded)), 404, 40400)
    ok(clients["owner"].delete(model_path(project.id, uploaded)))
    assert ok(clients["editor"].get(f"/api/v1/models/{uploaded}"))["id"] == uploaded  # its uploader's again
    assert error(clients["viewer"].get(f"/api/v1/models/{uploaded}"), 404, 40400)
    ok(clients["editor"].delete(model_path(project.id, built.id)))
    assert IfcModel.objects.get(pk=built.id).uploaded_by == people["editor"]
    assert ok(clients["owner"].get(f"/api/v1/chat/projects/{project.id}"))["models"] == []


# --- georeference ------------------------------------------------------------------------------------------------


def test_two_models_whose_map_conversions_agree_meet_at_the_same_map_position():
    a, b = model_a(), model_b()
    assert georeference(a)["source"] == georeference(b)["source"] == "map-conversion"
    assert georeference(b)["crs"] == "EPSG:25832"
    for ifc in (a, b):
        assert np.abs(corners(transformed(matrix_of(georeference(ifc)), box_vertices(ifc))) - BOX_ON_MAP).max() < 0.001
    # the local frames differ: without the placement the boxes are far apart
    assert np.abs(corners(box_vertices(a)) - corners(box_vertices(b))).max() > 1


def test_a_millimetre_project_whose_scale_leaves_out_the_unit_conversion_keeps_its_size():
    run = ifcopenshell.api.run
    ifc = box_model(unit="MILLIMETERS", placement=placed(TURNED, (5, -3, 0)), conversion={**MAP_B, "Scale": 1.0})
    metre = run("unit.add_si_unit", ifc, unit_type="LENGTHUNIT")
    ifc.by_type("IfcProjectedCRS")[0].MapUnit = metre
    assert np.abs(corners(transformed(matrix_of(georeference(ifc)), box_vertices(ifc))) - BOX_ON_MAP).max() < 0.001
    ifc.by_type("IfcMapConversion")[0].Scale = 0.001  # the written-by-the-book form gives the same
    assert np.abs(corners(transformed(matrix_of(georeference(ifc)), box_vertices(ifc))) - BOX_ON_MAP).max() < 0.001


def test_a_map_unit_in_millimetres_converts_eastings_to_metres():
    run = ifcopenshell.api.run
    ifc = box_model(placement=placed(np.eye(4), (10, 20, 0)), conversion={"Eastings": 500000e3, "Northings": 5400000e3, "OrthogonalHeight": 100e3, "Scale": 1000.0})
    ifc.by_type("IfcProjectedCRS")[0].MapUnit = run("unit.add_si_unit", ifc, unit_type="LENGTHUNIT", prefix="MILLI")
    assert np.abs(corners(transformed(matrix_of(georeference(ifc)), box_vertices(ifc))) - BOX_ON_MAP).max() < 0.001


def test_a_scaled_map_conversion_and_per_axis_scales():
    ifc = box_model("IFC4X3", placement=placed(np.eye(4), (10, 20, 0)), conversion={**MAP_A, "Scale": 0.9996, "FactorX": 1.0, "FactorY": 1.0, "FactorZ": 0.5},
                    conversion_class="IfcMapConversionScaled")
    matrix = matrix_of(georeference(ifc))
    assert np.allclose(np.diag(matrix)[:3], [0.9996, 0.9996, 0.4998]) and np.allclose(matrix[:3, 3], [500000, 5400000, 100])
    drafts = helmert_matrix({"eastings": 1.0, "scale_x": 1.0, "scale_y": 0.5, "scale_z": 2.0})  # IFC4X3 drafts' ScaleY, ScaleZ
    assert np.allclose(transformed(drafts, np.array([[1.0, 1.0, 1.0]])), [[2.0, 0.5, 2.0]])


def test_an_ifc2x3_model_is_placed_by_its_project_epsets():
    run = ifcopenshell.api.run
    ifc = box_model("IFC2X3", unit="MILLIMETERS", placement=placed(TURNED, (5, -3, 0)))
    project = ifc.by_type("IfcProject")[0]
    conversion = run("pset.add_pset", ifc, product=project, name="ePSet_MapConversion")
    run("pset.edit_pset", ifc, pset=conversion, properties={key: value for key, value in MAP_B.items()})
    crs = run("pset.add_pset", ifc, product=project, name="ePSet_ProjectedCRS")
    run("pset.edit_pset", ifc, pset=crs, properties={"Name": "EPSG:25832", "MapUnit": "METRE"})
    answer = georeference(ifc)
    assert (answer["source"], answer["crs"]) == ("epset-map-conversion", "EPSG:25832")
    assert np.abs(corners(transformed(matrix_of(answer), box_vertices(ifc))) - BOX_ON_MAP).max() < 0.001


def test_models_without_a_map_conversion_are_placed_by_their_site():
    answer = georeference(box_model(placement=placed(np.eye(4), (10, 20, 0))))
    assert (answer["source"], answer["crs"]) == ("site", None) and np.allclose(matrix_of(answer), np.eye(4))
    for name in ("IfcOpenHouse_IFC4.ifc", "AC20-FZK-Haus.ifc", "duplex.ifc"):  # none of the samples is georeferenced
        answer = georeference(sample(name))
        assert answer["source"] == "site" and np.allclose(matrix_of(answer), np.eye(4)), name


# --- federation --------------------------------------------------------------------------------------------------


def test_the_federation_places_both_models_at_the_same_project_point(api):
    project_id = new_project(api)
    a, b = model_a(), model_b()
    a_id = upload_ifc(api, a, "arc.ifc", projectId=project_id, discipline="ARC")
    b_id = upload_ifc(api, b, "str.ifc", projectId=project_id, discipline="STR")
    site_id = upload_ifc(api, box_model(placement=placed(np.eye(4), (1, 1, 0))), "site.ifc", projectId=project_id, discipline="MEP")
    federation = ok(api.get(f"/api/v1/projects/{project_id}/federation"))
    assert federation["origin"] == [500000.0, 5400000.0, 100.0] and federation["crs"] == "EPSG:25832"
    rows = {row["modelId"]: row for row in federation["models"]}
    assert [row["modelId"] for row in federation["models"]] == [a_id, b_id, site_id]
    assert {key: rows[b_id][key] for key in ("discipline", "version", "status", "georeference")} == {
        "discipline": "STR", "version": "v1", "status": "converting", "georeference": "map-conversion"}
    matrices = {model_id: np.array(row["matrix"]).reshape(4, 4, order="F") for model_id, row in rows.items()}
    in_project = {model_id: corners(transformed(matrices[model_id], box_vertices(ifc))) for model_id, ifc in ((a_id, a), (b_id, b))}
    assert np.abs(in_project[a_id] - in_project[b_id]).max() < 0.001
    assert np.abs(in_project[a_id] - (BOX_ON_MAP - [500000, 5400000, 100])).max() < 0.001
    assert np.allclose(matrices[site_id], np.eye(4)) and rows[site_id]["georeference"] == "site"
    placements = project_placements(project_id)
    assert set(placements) == {a_id, b_id, site_id}
    assert all(np.allclose(placements[model_id], matrices[model_id]) for model_id in placements)


def test_the_federation_reads_the_conversions_georeference_file_first(api):
    project_id = new_project(api)
    model_id = upload_ifc(api, model_a(), "arc.ifc", projectId=project_id)
    written = placed(np.eye(4), (500100.0, 5400200.0, 50.0))
    Path(model_dir(model_id) / "georeference.json").write_text(json.dumps(
        {"source": "map-conversion", "matrix": [float(v) for v in written.flatten(order="F")], "crs": "EPSG:31467"}))
    federation = ok(api.get(f"/api/v1/projects/{project_id}/federation"))
    assert (federation["origin"], federation["crs"]) == ([500100.0, 5400200.0, 50.0], "EPSG:31467")
    (model_dir(model_id) / "georeference.json").write_text("{broken")
    assert ok(api.get(f"/api/v1/projects/{project_id}/federation"))["origin"] == [500000.0, 5400000.0, 100.0]


def test_a_project_without_map_conversions_places_every_model_as_it_is(api):
    project_id = new_project(api)
    ids = [upload_ifc(api, box_model(placement=placed(np.eye(4), (x, 0, 0))), f"{x}.ifc", projectId=project_id) for x in (0, 30)]
    # a schema ifcopenshell cannot open is placed as it is, not an error
    ids.append(ok(upload(api, sample("KIT-Simple-Road-Test-Web-IFC4x3_RC2.ifc").read_bytes(), "road.ifc", projectId=project_id))["id"])
    federation = ok(api.get(f"/api/v1/projects/{project_id}/federation"))
    assert federation["origin"] == [0.0, 0.0, 0.0] and federation["crs"] is None
    assert [row["modelId"] for row in federation["models"]] == ids
    assert [row["georeference"] for row in federation["models"]] == ["site", "site", "none"]
    assert all(np.allclose(row["matrix"], np.eye(4).flatten()) for row in federation["models"])
    assert error(api.get("/api/v1/projects/p_0000000000000000/federation"), 404, 40400)
