"""Generated truth models for the clash engine: a structural grid (columns and beams, one IFC) and a services run
(ducts, pipes, a sleeve, one IFC) made with ifcopenshell.api, crossing at places whose clashes are known by
construction (every solid is a box or a round pipe along an axis, so depths, distances and points are simple
arithmetic, written out below).

Structure (metres, project frame): columns C1..C4 0.4 x 0.4 x 3 at (0,0) (6,0) (0,6) (6,6); beams B1 (y=0) and B2
(y=6) along x, B3 (x=0) and B4 (x=6) along y, 0.3 wide, z 2.5..3.0, ending on the columns' faces (touching); a wall
W1 x 0..6, y -3.1..-2.9, z 0..3 with an opening x 2.7..3.3, z 2.3..2.9.
Services: D1 duct x 2.8..3.2, y -4..7, z 2.45..2.75: through W1's opening (0.1 clear) and 0.25 into B1 and B2;
D2 duct x 4.3..4.7, y -1..7, z 3.0..3.3: lying on B1 and B2 (touching faces); D6 the same duct again (a duplicate);
D3 duct x -1..7, y 2.9..3.1, z 2.8..3.0: its top coplanar with the tops of B3 and B4, 0.2 into each;
D4 a sleeve x 5.9..6.1, y 5.9..6.1, z 1..1.2, wholly inside C4; D5 duct x 0.1..0.5, y -4..-1, z 1..1.3 through W1
beside the opening (0.5 to slide out sideways); pipes P1 (r 0.05, along x at y 0, z 1, x 3..5.751: 49 mm from C2)
and P2 (at y 6, x 3..5.749: 51 mm from C4).

The services model can be written in its own frame: moved by a different local origin (turned 30 degrees about z
and shifted) with an IfcMapConversion that puts it back (both models carry a map conversion; the structure's is a
plain shift), so the engine must use each model's georeference matrix to find the same clashes.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

EASTINGS, NORTHINGS, HEIGHT = 500000.0, 5000000.0, 100.0
SERVICES_TURN = math.radians(30.0)
SERVICES_SHIFT = np.array([10.0, 20.0, 0.0])

COLUMNS = {f"C{i + 1}": (x - 0.2, y - 0.2, 0.0, x + 0.2, y + 0.2, 3.0) for i, (x, y) in enumerate(((0, 0), (6, 0), (0, 6), (6, 6)))}
BEAMS = {"B1": (0.2, -0.15, 2.5, 5.8, 0.15, 3.0), "B2": (0.2, 5.85, 2.5, 5.8, 6.15, 3.0),
         "B3": (-0.15, 0.2, 2.5, 0.15, 5.8, 3.0), "B4": (5.85, 0.2, 2.5, 6.15, 5.8, 3.0)}
WALL = ("W1", (0.0, -3.1, 0.0, 6.0, -2.9, 3.0), (2.7, -3.2, 2.3, 3.3, -2.8, 2.9))  # name, body, opening
DUCTS = {"D1": ("IfcDuctSegment", (2.8, -4.0, 2.45, 3.2, 7.0, 2.75)), "D2": ("IfcDuctSegment", (4.3, -1.0, 3.0, 4.7, 7.0, 3.3)),
         "D3": ("IfcDuctSegment", (-1.0, 2.9, 2.8, 7.0, 3.1, 3.0)), "D4": ("IfcDuctFitting", (5.9, 5.9, 1.0, 6.1, 6.1, 1.2)),
         "D5": ("IfcDuctSegment", (0.1, -4.0, 1.0, 0.5, -1.0, 1.3)), "D6": ("IfcDuctSegment", (4.3, -1.0, 3.0, 4.7, 7.0, 3.3))}
PIPE_RADIUS = 0.05
PIPES = {"P1": ((3.0, 0.0, 1.0), 2.751), "P2": ((3.0, 6.0, 1.0), 2.749)}  # start on the axis, length along +x

TOLERANCE, CLEARANCE = 0.01, 0.05
# structure (A) against services (B): (a, b) -> (depth, point)
HARD = {("B1", "D1"): (0.25, (3.0, 0.0, 2.625)), ("B2", "D1"): (0.25, (3.0, 6.0, 2.625)),
        ("B3", "D3"): (0.2, (0.0, 3.0, 2.9)), ("B4", "D3"): (0.2, (6.0, 3.0, 2.9)),
        ("C4", "D4"): (0.3, (6.0, 6.0, 1.1)), ("W1", "D5"): (0.5, (0.3, -3.0, 1.15))}
# clearance CLEARANCE: (a, b) -> distance (overlapping and touching pairs 0)
CLEAR = {**{pair: 0.0 for pair in HARD}, ("B1", "D2"): 0.0, ("B2", "D2"): 0.0, ("B1", "D6"): 0.0, ("B2", "D6"): 0.0,
         ("C2", "P1"): 0.049}
# the services against themselves
SERVICES_HARD = {("D2", "D6"): (0.3, (4.5, 3.0, 3.15))}
SERVICES_DUPLICATES = {("D2", "D6")}


def _turn(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def services_frame() -> np.ndarray:
    """The services model's own frame -> the project frame (4x4) when it is written moved."""
    matrix = _turn(SERVICES_TURN)
    matrix[:3, 3] = SERVICES_SHIFT
    return matrix


class _Writer:
    def __init__(self, name: str, frame: np.ndarray, map_conversion: tuple[float, float, float, float] | None):
        import ifcopenshell
        import ifcopenshell.api.aggregate
        import ifcopenshell.api.context
        import ifcopenshell.api.feature
        import ifcopenshell.api.geometry
        import ifcopenshell.api.georeference
        import ifcopenshell.api.root
        import ifcopenshell.api.spatial
        import ifcopenshell.api.unit

        self.api = ifcopenshell.api
        self.file = ifcopenshell.file(schema="IFC4")
        f, api = self.file, self.api
        project = api.root.create_entity(f, ifc_class="IfcProject", name=name)
        api.unit.assign_unit(f, units=[api.unit.add_si_unit(f, unit_type="LENGTHUNIT")])
        model = api.context.add_context(f, context_type="Model")
        self.body = api.context.add_context(f, context_type="Model", context_identifier="Body", target_view="MODEL_VIEW", parent=model)
        site = api.root.create_entity(f, ifc_class="IfcSite", name="Site")
        building = api.root.create_entity(f, ifc_class="IfcBuilding", name="Building")
        self.storey = api.root.create_entity(f, ifc_class="IfcBuildingStorey", name="Level 1")
        api.aggregate.assign_object(f, relating_object=project, products=[site])
        api.aggregate.assign_object(f, relating_object=site, products=[building])
        api.aggregate.assign_object(f, relating_object=building, products=[self.storey])
        if map_conversion is not None:
            eastings, northings, height, angle = map_conversion
            api.georeference.add_georeferencing(f, name="EPSG:25832")
            api.georeference.edit_georeferencing(f, coordinate_operation={
                "Eastings": eastings, "Northings": northings, "OrthogonalHeight": height,
                "XAxisAbscissa": math.cos(angle), "XAxisOrdinate": math.sin(angle), "Scale": 1.0})
        self.to_local = np.linalg.inv(frame)
        self.guids: dict[str, str] = {}

    def _product(self, ifc_class: str, name: str, placement: np.ndarray, solid, contained: bool = True):
        f, api = self.file, self.api
        product = api.root.create_entity(f, ifc_class=ifc_class, name=name)
        api.geometry.edit_object_placement(f, product=product, matrix=self.to_local @ placement, is_si=True)
        representation = f.createIfcShapeRepresentation(self.body, "Body", "SweptSolid", [solid])
        api.geometry.assign_representation(f, product=product, representation=representation)
        if contained:
            api.spatial.assign_container(f, relating_structure=self.storey, products=[product])
        self.guids[name] = product.GlobalId
        return product

    def _extrusion(self, profile, depth: float):
        f = self.file
        return f.createIfcExtrudedAreaSolid(profile, f.createIfcAxis2Placement3D(f.createIfcCartesianPoint((0.0, 0.0, 0.0))),
                                            f.createIfcDirection((0.0, 0.0, 1.0)), depth)

    def box(self, ifc_class: str, name: str, box, contained: bool = True):
        """A box (min x y z, max x y z, project frame): a rectangle extruded up from its bottom face's centre."""
        x0, y0, z0, x1, y1, z1 = box
        placement = np.eye(4)
        placement[:3, 3] = ((x0 + x1) / 2, (y0 + y1) / 2, z0)
        profile = self.file.createIfcRectangleProfileDef("AREA", None, None, float(x1 - x0), float(y1 - y0))
        return self._product(ifc_class, name, placement, self._extrusion(profile, float(z1 - z0)), contained)

    def pipe(self, name: str, start, length: float):
        """A round pipe along +x from start (its axis)."""
        placement = np.eye(4)
        placement[:3, :3] = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0]], dtype=float)  # local x, y, z = world y, z, x
        placement[:3, 3] = start
        profile = self.file.createIfcCircleProfileDef("AREA", None, None, PIPE_RADIUS)
        return self._product("IfcPipeSegment", name, placement, self._extrusion(profile, float(length)))

    def write(self, path: Path) -> dict[str, str]:
        self.file.write(str(path))
        return self.guids


def write_structure(path: Path, georeferenced: bool = True) -> dict[str, str]:
    """The structure IFC at path; answers {name: GlobalId}."""
    writer = _Writer("Structure", np.eye(4), (EASTINGS, NORTHINGS, HEIGHT, 0.0) if georeferenced else None)
    for name, box in COLUMNS.items():
        writer.box("IfcColumn", name, box)
    for name, box in BEAMS.items():
        writer.box("IfcBeam", name, box)
    name, body, hole = WALL
    wall = writer.box("IfcWall", name, body)
    opening = writer.box("IfcOpeningElement", "O1", hole, contained=False)
    writer.api.feature.add_feature(writer.file, feature=opening, element=wall)
    return writer.write(path)


def write_services(path: Path, moved: bool = False) -> dict[str, str]:
    """The services IFC at path (moved: in its own frame, with the map conversion that puts it back; else in the
    project frame without georeference); answers {name: GlobalId}."""
    if moved:
        x, y, _ = SERVICES_SHIFT
        writer = _Writer("Services", services_frame(), (EASTINGS + x, NORTHINGS + y, HEIGHT, SERVICES_TURN))
    else:
        writer = _Writer("Services", np.eye(4), None)
    for name, (ifc_class, box) in DUCTS.items():
        writer.box(ifc_class, name, box)
    for name, (start, length) in PIPES.items():
        writer.pipe(name, start, length)
    return writer.write(path)


def project_matrices(structure: dict, services: dict) -> tuple[np.ndarray, np.ndarray]:
    """Each model's matrix to the project frame from their georeference() answers: the map frame shifted by the
    first georeferenced model's translation rounded to whole metres (as the federation places them)."""
    first = np.array(structure["matrix"], dtype=float).reshape(4, 4, order="F")
    second = np.array(services["matrix"], dtype=float).reshape(4, 4, order="F")
    shift = np.eye(4)
    if structure["source"] in ("map-conversion", "epset-map-conversion"):
        shift[:3, 3] = -np.round(first[:3, 3])
    return shift @ first, shift @ second
