"""A small federated project for the tests of clash issues, reports and the agent's clash tools: a structure model
(two beams) and a services model (two ducts), each ready, with the files a conversion leaves (metadata.json,
clash-geometry.bin, element-bounds.json), boxes whose clashes are known by construction:

    beam B1 along x at y 0..0.3, beam B2 along x at y 5..5.3, both at z 3..3.5 (storey "Level 1")
    duct D1 along y at x 2..2.4 crossing both beams (z 3.1..3.4: 0.3 m deep in each)  -> 2 hard clashes
    duct D2 along y at x 8..8.4, y -1..1, crossing B1 only                            -> 1 hard clash

`move_duct` rewrites the services model's geometry (D1 lowered under the beams resolves its two clashes); the runs
are the real ones (coordination_app.services.runs: request, then run here as a clash worker runs it)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from coordination_app.models import ClashRun, ClashTest
from coordination_app.services.clash_tests import clash_test_put
from coordination_app.services.runs import clash_run_now, run_request
from models_app import project_services
from models_app.conversion.clash_geometry import ClashGeometryWriter
from models_app.models import IfcModel, Project
from models_app.public import model_dir

B1, B2 = "0Beam00000000000000001", "0Beam00000000000000002"
D1, D2 = "0Duct00000000000000001", "0Duct00000000000000002"
STOREY = "0Storey000000000000001"
BEAMS = {B1: ("IfcBeam", "Beam B1", (0, 0, 3, 10, 0.3, 3.5)), B2: ("IfcBeam", "Beam B2", (0, 5, 3, 10, 5.3, 3.5))}
DUCT_D1_CROSSING = (2, -1, 3.1, 2.4, 6, 3.4)
DUCT_D1_LOWERED = (2, -1, 1.0, 2.4, 6, 1.3)
DUCT_D2 = (8, -1, 3.1, 8.4, 1, 3.4)


def box_mesh(box) -> tuple[np.ndarray, np.ndarray]:
    """The 8 corners and 12 triangles (outward) of an axis-aligned box (min x y z, max x y z)."""
    x0, y0, z0, x1, y1, z1 = box
    vertices = np.array([[x, y, z] for z in (z0, z1) for y in (y0, y1) for x in (x0, x1)], dtype=float)
    faces = np.array([
        [0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
        [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5],
    ])
    return vertices, faces


def write_model_files(model: IfcModel, elements: dict[str, tuple[str, str, tuple]], *, storey: str = "Level 1") -> None:
    """model.ifc, and what its conversion would leave: metadata.json (project, storey, elements), clash-geometry.bin
    and element-bounds.json."""
    folder = model_dir(model.id)
    folder.mkdir(parents=True, exist_ok=True)
    objects = [{"id": f"0Proj{model.id[-17:]}", "name": "Project", "type": "IfcProject", "parent": None},
               {"id": STOREY, "name": storey, "type": "IfcBuildingStorey", "parent": f"0Proj{model.id[-17:]}"}]
    objects += [{"id": guid, "name": name, "type": kind, "parent": STOREY} for guid, (kind, name, _) in elements.items()]
    (folder / "metadata.json").write_text(json.dumps({"schema": "IFC4", "metaObjects": objects}))
    with open(folder / "clash-geometry.bin", "wb") as handle:
        writer = ClashGeometryWriter(handle)
        for guid, (kind, _, box) in elements.items():
            writer.element(guid, kind, *box_mesh(box))
        writer.end()
    (folder / "element-bounds.json").write_text(json.dumps({guid: list(map(float, box)) for guid, (_, _, box) in elements.items()}))
    write_boxes_ifc(folder / "model.ifc", elements, storey=storey)


def ducts(d1_box=DUCT_D1_CROSSING) -> dict:
    return {D1: ("IfcDuctSegment", "Duct D1", d1_box), D2: ("IfcDuctSegment", "Duct D2", DUCT_D2)}


def federated_project() -> dict:
    """{project, structure, services, test}: two ready models in a project and the hard test services x structure."""
    project = Project.objects.create(title="Tower", kind="ifc")
    structure = IfcModel.objects.create(name="Structure.ifc", status="ready")
    services = IfcModel.objects.create(name="Services.ifc", status="ready")
    for model in (structure, services):
        model_dir(model.id).mkdir(parents=True)
    project_services.project_add_model(project, structure, "STR")
    project_services.project_add_model(project, services, "MEP")
    write_model_files(structure, BEAMS)
    write_model_files(services, ducts())
    test, _ = clash_test_put(project_id=project.id, name="ducts-beams", a={"models": [services.id]}, b={"models": [structure.id]}, kind="hard")
    return {"project": project, "structure": structure, "services": services, "test": test}


def move_duct(services: IfcModel, d1_box) -> None:
    write_model_files(services, ducts(d1_box))


def run_test(test: ClashTest, *, staged: bool = False) -> ClashRun:
    """A run requested and run here, as a clash worker runs it; the run's row after it ended."""
    run = run_request(test, staged=staged)
    clash_run_now(run.id)
    run.refresh_from_db()
    assert run.status == ClashRun.Status.DONE, (run.status, run.error)
    return run


def model_file_path(model: IfcModel, name: str) -> Path:
    return model_dir(model.id) / name


def write_boxes_ifc(path: Path, elements: dict[str, tuple[str, str, tuple]], *, storey: str = "Level 1") -> Path:
    """An IFC4 model (metres) with one storey holding the elements, each an extruded box with its fixed GlobalId."""
    import ifcopenshell
    import ifcopenshell.api.aggregate
    import ifcopenshell.api.context
    import ifcopenshell.api.geometry
    import ifcopenshell.api.root
    import ifcopenshell.api.spatial
    import ifcopenshell.api.unit

    ifc = ifcopenshell.file(schema="IFC4")
    project = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcProject", name="Boxes")
    ifcopenshell.api.unit.assign_unit(ifc, length={"is_metric": True, "raw": "METERS"})
    model = ifcopenshell.api.context.add_context(ifc, context_type="Model")
    body = ifcopenshell.api.context.add_context(ifc, context_type="Model", context_identifier="Body", target_view="MODEL_VIEW", parent=model)
    site = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcSite", name="Site")
    building = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcBuilding", name="Building")
    level = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcBuildingStorey", name=storey)
    level.GlobalId = STOREY
    ifcopenshell.api.aggregate.assign_object(ifc, products=[site], relating_object=project)
    ifcopenshell.api.aggregate.assign_object(ifc, products=[building], relating_object=site)
    ifcopenshell.api.aggregate.assign_object(ifc, products=[level], relating_object=building)
    for guid, (kind, name, (x0, y0, z0, x1, y1, z1)) in elements.items():
        element = ifcopenshell.api.root.create_entity(ifc, ifc_class=kind, name=name)
        element.GlobalId = guid
        matrix = np.eye(4)
        matrix[:3, 3] = (x0, y0, z0)
        ifcopenshell.api.geometry.edit_object_placement(ifc, product=element, matrix=matrix)
        centre = ifc.createIfcAxis2Placement2D(ifc.createIfcCartesianPoint(((x1 - x0) / 2, (y1 - y0) / 2)))
        profile = ifc.createIfcRectangleProfileDef("AREA", None, centre, float(x1 - x0), float(y1 - y0))
        solid = ifc.createIfcExtrudedAreaSolid(profile, ifc.createIfcAxis2Placement3D(ifc.createIfcCartesianPoint((0.0, 0.0, 0.0))),
                                               ifc.createIfcDirection((0.0, 0.0, 1.0)), float(z1 - z0))
        ifcopenshell.api.geometry.assign_representation(ifc, product=element, representation=ifc.createIfcShapeRepresentation(body, "Body", "SweptSolid", [solid]))
        ifcopenshell.api.spatial.assign_container(ifc, products=[element], relating_structure=level)
    ifc.write(str(path))
    return path
