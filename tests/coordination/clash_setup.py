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
import time

import numpy as np

from coordination_app.models import ClashRun, ClashTest
from coordination_app.services.clash_tests import clash_test_put
from coordination_app.services.runs import clash_run_now, run_request
from models_app import project_services
from models_app.conversion.clash_geometry import ClashGeometryWriter
from models_app.conversion.georeference import GEOREFERENCE_FILE, MAP_CONVERSION, column_major
from models_app.models import IfcModel, Project
from models_app.public import model_dir
from tests.coordination.clash_helpers import box, write_boxes_ifc

B1, B2 = "0Beam00000000000000001", "0Beam00000000000000002"
D1, D2 = "0Duct00000000000000001", "0Duct00000000000000002"
STOREY = "0Storey000000000000001"
BEAMS = {B1: ("IfcBeam", "Beam B1", (0, 0, 3, 10, 0.3, 3.5)), B2: ("IfcBeam", "Beam B2", (0, 5, 3, 10, 5.3, 3.5))}
DUCT_D1_CROSSING = (2, -1, 3.1, 2.4, 6, 3.4)
DUCT_D1_LOWERED = (2, -1, 1.0, 2.4, 6, 1.3)
DUCT_D2 = (8, -1, 3.1, 8.4, 1, 3.4)


def box_mesh(corners) -> tuple[np.ndarray, np.ndarray]:
    """The 8 corners and 12 triangles (outward) of an axis-aligned box (min x y z, max x y z)."""
    x0, y0, z0, x1, y1, z1 = corners
    vertices = np.array([[x, y, z] for z in (z0, z1) for y in (y0, y1) for x in (x0, x1)], dtype=float)
    faces = np.array([
        [0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
        [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5],
    ])
    return vertices, faces


def boxes_of(elements: dict[str, tuple[str, str, tuple]]) -> dict[str, dict]:
    """The elements as clash_helpers.box() specs (corner and size), for write_boxes_ifc."""
    return {guid: box(kind, name, tuple(corners[:3]), tuple(high - low for low, high in zip(corners[:3], corners[3:])))
            for guid, (kind, name, corners) in elements.items()}


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
        for guid, (kind, _, corners) in elements.items():
            writer.element(guid, kind, *box_mesh(corners))
        writer.end()
    (folder / "element-bounds.json").write_text(json.dumps({guid: list(map(float, corners)) for guid, (_, _, corners) in elements.items()}))
    write_boxes_ifc(folder / "model.ifc", boxes_of(elements), storey=storey)


def ducts(d1_box=DUCT_D1_CROSSING) -> dict:
    return {D1: ("IfcDuctSegment", "Duct D1", d1_box), D2: ("IfcDuctSegment", "Duct D2", DUCT_D2)}


def map_conversion(model: IfcModel, easting: float, northing: float, height: float = 0.0) -> None:
    """georeference.json as a conversion writes it for a model with an IfcMapConversion (a translation)."""
    matrix = np.eye(4)
    matrix[:3, 3] = (easting, northing, height)
    (model_dir(model.id) / GEOREFERENCE_FILE).write_text(json.dumps({"source": MAP_CONVERSION, "matrix": column_major(matrix), "crs": "EPSG:25832"}))


def shifted(elements: dict, offset) -> dict:
    """The elements with their boxes moved by -offset (the same places in a frame whose origin lies at +offset)."""
    return {guid: (kind, name, tuple(v - offset[i % 3] for i, v in enumerate(corners))) for guid, (kind, name, corners) in elements.items()}


def federated_project(services_offset: tuple[float, float, float] | None = None) -> dict:
    """{project, structure, services, test}: two ready models in a project and the hard test services x structure.
    With services_offset, both models have map conversions and the services model's local origin lies that far
    from the structure's (its boxes are written shifted back): the same clashes, found in the project frame."""
    project = Project.objects.create(title="Tower", kind="ifc")
    structure = IfcModel.objects.create(name="Structure.ifc", status="ready")
    services = IfcModel.objects.create(name="Services.ifc", status="ready")
    for model in (structure, services):
        model_dir(model.id).mkdir(parents=True)
    project_services.project_add_model(project, structure, "STR")
    project_services.project_add_model(project, services, "MEP")
    write_model_files(structure, BEAMS)
    write_model_files(services, ducts() if services_offset is None else shifted(ducts(), services_offset))
    if services_offset is not None:
        map_conversion(structure, 500_000.0, 5_400_000.0)
        map_conversion(services, 500_000.0 + services_offset[0], 5_400_000.0 + services_offset[1], services_offset[2])
    test, _ = clash_test_put(project_id=project.id, name="ducts-beams", a={"models": [services.id]}, b={"models": [structure.id]}, kind="hard")
    return {"project": project, "structure": structure, "services": services, "test": test}


def move_duct(services: IfcModel, d1_box) -> None:
    write_model_files(services, ducts(d1_box))


def run_test(test: ClashTest, *, staged: bool = False) -> ClashRun:
    """A run requested and run here, as a clash worker runs it (or by a worker thread that took it first); the run's
    row after it ended."""
    run = run_request(test, staged=staged)
    clash_run_now(run.id)
    deadline = time.monotonic() + 60
    run.refresh_from_db()
    while run.status in (ClashRun.Status.QUEUED, ClashRun.Status.RUNNING) and time.monotonic() < deadline:
        time.sleep(0.05)
        run.refresh_from_db()
    assert run.status == ClashRun.Status.DONE, (run.status, run.error)
    return run

