"""Fixtures of the IDS check tests: a project with a model, small IFC models made with ifcopenshell, IDS texts."""

from __future__ import annotations

import shutil
from pathlib import Path

import ifcopenshell
import ifcopenshell.api.aggregate
import ifcopenshell.api.context
import ifcopenshell.api.geometry
import ifcopenshell.api.pset
import ifcopenshell.api.root
import ifcopenshell.api.spatial
import ifcopenshell.api.unit
import numpy
import pytest

from checks_app import services
from checks_app.models import Check
from checks_app.services.ids_files import validated_ids
from models_app.models import IfcModel, Project, ProjectModel
from models_app.storage import model_dir

EXAMPLE_IDS = Path(__file__).resolve().parents[2] / "checks_app" / "examples" / "review-basics.ids"
WALL_GUIDS = {"A": "0aaaaaaaaaaaaaaaaaaaaa", "B": "0bbbbbbbbbbbbbbbbbbbbb", "C": "0ccccccccccccccccccccc"}


def fire_ids(title: str = "Fire ratings", spec_name: str = "Walls have a fire rating") -> bytes:
    return f"""<?xml version="1.0" encoding="utf-8"?>
<ids xmlns="http://standards.buildingsmart.org/IDS" xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <info><title>{title}</title></info>
  <specifications>
    <specification name="{spec_name}" ifcVersion="IFC4" instructions="Set Pset_WallCommon.FireRating">
      <applicability minOccurs="0" maxOccurs="unbounded">
        <entity><name><simpleValue>IFCWALL</simpleValue></name></entity>
      </applicability>
      <requirements>
        <property>
          <propertySet><simpleValue>Pset_WallCommon</simpleValue></propertySet>
          <baseName><simpleValue>FireRating</simpleValue></baseName>
          <value><xs:restriction base="xs:string"><xs:pattern value="REI[0-9]+"/></xs:restriction></value>
        </property>
      </requirements>
    </specification>
  </specifications>
</ids>
""".encode()


def write_walls_ifc(path: Path, fire_ratings: dict[str, str] | None = None, names: dict[str, str] | None = None) -> Path:
    """An IFC4 model with a storey and walls A, B, C (fixed GlobalIds); fire_ratings: wall -> Pset_WallCommon value."""
    ifc = ifcopenshell.file(schema="IFC4")
    project = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcProject", name="Walls")
    ifcopenshell.api.unit.assign_unit(ifc)
    ifcopenshell.api.context.add_context(ifc, context_type="Model")
    site = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcSite", name="Site")
    building = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcBuilding", name="Building")
    storey = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcBuildingStorey", name="Ground floor")
    ifcopenshell.api.aggregate.assign_object(ifc, products=[site], relating_object=project)
    ifcopenshell.api.aggregate.assign_object(ifc, products=[building], relating_object=site)
    ifcopenshell.api.aggregate.assign_object(ifc, products=[storey], relating_object=building)
    for index, (key, guid) in enumerate(WALL_GUIDS.items()):
        wall = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcWall", name=(names or {}).get(key, f"Wall {key}"))
        wall.GlobalId = guid
        matrix = numpy.eye(4)
        matrix[0][3] = 5.0 * index
        ifcopenshell.api.geometry.edit_object_placement(ifc, product=wall, matrix=matrix)
        ifcopenshell.api.spatial.assign_container(ifc, products=[wall], relating_structure=storey)
        if key in (fire_ratings or {}):
            pset = ifcopenshell.api.pset.add_pset(ifc, product=wall, name="Pset_WallCommon")
            ifcopenshell.api.pset.edit_pset(ifc, pset=pset, properties={"FireRating": fire_ratings[key]})
    ifc.write(str(path))
    return path


@pytest.fixture(autouse=True)
def _no_validated_ids_of_other_tests():
    """Each test validates its IDS uploads afresh (the gateway process keeps the ones it validated)."""
    validated_ids.clear()
    yield
    validated_ids.clear()


@pytest.fixture
def project():
    return Project.objects.create(title="Review", kind=Project.Kind.CAD)


@pytest.fixture
def make_model(project):
    def make(ifc: Path | None = None, *, in_project: bool = True, **walls) -> IfcModel:
        record = IfcModel.objects.create(name="walls.ifc", status="ready")
        model_dir(record.id).mkdir(parents=True)
        target = model_dir(record.id) / "model.ifc"
        if ifc is None:
            write_walls_ifc(target, **walls)
        else:
            shutil.copyfile(ifc, target)
        if in_project:
            ProjectModel.objects.create(project=project, model=record)
        return record

    return make


@pytest.fixture
def put_ids(api, project):
    def put(name: str, data: bytes, project_id: str | None = None):
        return api.generic("PUT", f"/api/v1/projects/{project_id or project.id}/ids/{name}", data, content_type="application/xml")

    return put


@pytest.fixture
def run_checks():
    """Runs every queued check here and now, as a check worker would (the check's child process is real)."""

    def run() -> list[str]:
        ran = []
        for check_id in Check.objects.filter(status=Check.Status.QUEUED).order_by("created_at").values_list("id", flat=True):
            services.check_run(check_id)
            ran.append(check_id)
        return ran

    return run


@pytest.fixture
def start_check(api, run_checks):
    """POSTs a check (JSON body), runs it, returns the GET answer's data."""

    def start(model_id: str, body: dict, run: bool = True) -> dict:
        response = api.post(f"/api/v1/models/{model_id}/checks", body, format="json")
        assert response.status_code == 200, response.content[:500]
        started = response.json()["data"]
        if run:
            run_checks()
        return api.get(f"/api/v1/models/{model_id}/checks/{started['checkId']}").json()["data"] | {"cached": started["cached"]}

    return start
