"""Helpers of the clash run and status tests: small IFC models of boxes made with ifcopenshell.api, put into a
project and converted for real (the confined conversion a worker runs), clash tests defined and run through the API,
the queued runs run here as a clash worker runs them."""

from __future__ import annotations

from pathlib import Path

import ifcopenshell
import ifcopenshell.api.aggregate
import ifcopenshell.api.context
import ifcopenshell.api.geometry
import ifcopenshell.api.root
import ifcopenshell.api.spatial
import ifcopenshell.api.unit
import numpy

from coordination_app import services as coordination
from coordination_app.models import ClashRun
from models_app import services as model_services
from models_app.models import IfcModel, Project, ProjectModel
from models_app.storage import model_dir

# GlobalIds of the boxes (22 characters of the IFC base-64 alphabet)
BEAM = "0beam000000000000000aa"
BEAM_2 = "0beam000000000000000bb"
DUCT = "0duct000000000000000aa"
DUCT_2 = "0duct000000000000000bb"


def box(ifc_class: str, name: str, at: tuple[float, float, float], size: tuple[float, float, float]) -> dict:
    """A box element: ifc_class, name, its corner `at` (metres) and its size along x, y, z."""
    return {"class": ifc_class, "name": name, "at": at, "size": size}


def write_boxes_ifc(path: Path, boxes: dict[str, dict], storey: str = "Level 1") -> Path:
    """An IFC4 model with one storey holding the boxes (GlobalId -> box()), each an extruded rectangle."""
    ifc = ifcopenshell.file(schema="IFC4")
    project = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcProject", name="Boxes")
    ifcopenshell.api.unit.assign_unit(ifc)
    model = ifcopenshell.api.context.add_context(ifc, context_type="Model")
    body = ifcopenshell.api.context.add_context(ifc, context_type="Model", context_identifier="Body", target_view="MODEL_VIEW", parent=model)
    site = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcSite", name="Site")
    building = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcBuilding", name="Building")
    level = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcBuildingStorey", name=storey)
    ifcopenshell.api.aggregate.assign_object(ifc, products=[site], relating_object=project)
    ifcopenshell.api.aggregate.assign_object(ifc, products=[building], relating_object=site)
    ifcopenshell.api.aggregate.assign_object(ifc, products=[level], relating_object=building)
    for guid, spec in boxes.items():
        element = ifcopenshell.api.root.create_entity(ifc, ifc_class=spec["class"], name=spec["name"])
        element.GlobalId = guid
        length, thickness, height = spec["size"]
        representation = ifcopenshell.api.geometry.add_wall_representation(ifc, context=body, length=length, height=height, thickness=thickness)
        ifcopenshell.api.geometry.assign_representation(ifc, product=element, representation=representation)
        matrix = numpy.eye(4)
        matrix[:3, 3] = spec["at"]
        ifcopenshell.api.geometry.edit_object_placement(ifc, product=element, matrix=matrix)
        ifcopenshell.api.spatial.assign_container(ifc, products=[element], relating_structure=level)
    ifc.write(str(path))
    return path


def converted_model(project: Project, boxes: dict[str, dict], name: str = "boxes.ifc") -> IfcModel:
    """A model of the project made of the boxes, converted for real."""
    record = IfcModel.objects.create(name=name)
    model_dir(record.id).mkdir(parents=True)
    write_boxes_ifc(model_dir(record.id) / "model.ifc", boxes)
    ProjectModel.objects.create(project=project, model=record)
    return reconverted(record.id)


def reconverted(model_id: str, boxes: dict[str, dict] | None = None) -> IfcModel:
    """The model's IFC replaced by the boxes (when given) and converted, as after a save; ready."""
    if boxes is not None:
        write_boxes_ifc(model_dir(model_id) / "model.ifc", boxes)
    model_services.request_conversion(model_id)
    model_services.run_conversion(model_id)
    model = IfcModel.objects.get(pk=model_id)
    assert model.status == "ready", model.error
    return model


def run_queued() -> list[str]:
    """Runs every queued clash run here and now, oldest first, as a clash worker would."""
    ran = []
    for run_id in ClashRun.objects.filter(status=ClashRun.Status.QUEUED).order_by("created_at").values_list("id", flat=True):
        coordination.clash_run_now(run_id)
        ran.append(run_id)
    return ran
