"""Clash detection benchmark: this engine (coordination_app.engine.find_clashes on the clash-geometry.bin a
conversion keeps) against ifcclash 0.9.0 (IfcOpenShell's BVH tree clash, the benchmark anchor), same test, same run.

    .venv/bin/python bench/clash.py [--samples duplex.ifc AC20-FZK-Haus.ifc] [--elements 20000] [--repeat 1]
    .venv/bin/python bench/clash.py --smoke     # one sample and a small generated pair, once: seconds

Tests: each sample (/work/shared/ifc-samples) against itself, and a generated federated pair (a structure model:
floors of columns and beams; a services model: ducts crossing the beams, pipes and boxes that clash with nothing;
at least --elements elements each) one against the other; hard, tolerance 1 cm, every IfcElement but
IfcFeatureElement (ifcclash's intersection mode with check_all, its default selection).
Each engine runs in a child process of its own (python -c), timed inside it from before it opens its input to its
answer: ifcclash opens the IFCs, meshes them into its tree and clashes; ours loads clash-geometry.bin (made
beforehand by the conversion's meshing, not timed: a conversion keeps it) and clashes; the generated pair's
clash geometry is written by the generator from the same solids (--mesh-pair: by the conversion's meshing, which
takes tens of minutes at full size here: ifcopenshell meshes each instance on its own). Peak memory: the child's
peak resident set (VmHWM; the interpreter and its imports included, for both). Prints JSON: per test
both times and peaks, the clash counts, the pairs both found, and the ratios ours/ifcclash.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SAMPLES = Path("/work/shared/ifc-samples")
TOLERANCE = 0.01
BAY, STOREY = 6.0, 3.5  # metres between columns, between floors
PIPE_SIDES = 24

# the child's peak resident set: VmHWM of /proc/self/status, which (unlike getrusage's ru_maxrss, kept across exec)
# starts afresh with the child's own memory
PEAK = """
def peak_mb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
"""

OURS = """
import json, sys, time
started = time.perf_counter()
{PEAK}
import numpy as np
from coordination_app.engine.clashes import ElementSet, find_clashes
with open(sys.argv[1]) as handle:
    spec = json.load(handle)
sides = [[ElementSet(f"m{number}", side["geometry"], np.eye(4), frozenset(side["guids"]))] for number, side in enumerate(spec["sides"])]
facts = find_clashes(sides[0], sides[1] if len(sides) > 1 else None, kind="hard", tolerance=spec["tolerance"])
seconds = time.perf_counter() - started
pairs = sorted(sorted((f.a_guid, f.b_guid)) for f in facts)
print(json.dumps({"seconds": seconds, "peakMB": peak_mb(), "pairs": pairs}))
""".replace("{PEAK}", PEAK)

IFCCLASH = """
import json, logging, sys, time
started = time.perf_counter()
{PEAK}
import ifcclash.ifcclash as ifcclash
with open(sys.argv[1]) as handle:
    spec = json.load(handle)
settings = ifcclash.ClashSettings()
settings.logger, settings.output = logging.getLogger("ifcclash"), "unused.json"
clasher = ifcclash.Clasher(settings)
clash_set = {"name": "hard", "a": [{"file": spec["sides"][0]["ifc"]}], "mode": "intersection", "tolerance": spec["tolerance"],
             "check_all": True}
if len(spec["sides"]) > 1:
    clash_set["b"] = [{"file": spec["sides"][1]["ifc"]}]
clasher.clash_sets = [clash_set]
clasher.clash()
seconds = time.perf_counter() - started
pairs = sorted({tuple(sorted((c["a_global_id"], c["b_global_id"]))) for c in clash_set["clashes"].values()})
print(json.dumps({"seconds": seconds, "peakMB": peak_mb(), "pairs": [list(p) for p in pairs]}))
""".replace("{PEAK}", PEAK)


# --- the generated federated pair --------------------------------------------------------------------------------


class _Model:
    """An IFC4 model written entity by entity (no ifcopenshell.api: tens of thousands of elements in seconds), one
    representation per element size, shared (as type-based models do)."""

    def __init__(self, name: str):
        import ifcopenshell
        import ifcopenshell.guid

        self.new_guid = ifcopenshell.guid.new
        self.file = f = ifcopenshell.file(schema="IFC4")
        unit = f.createIfcSIUnit(None, "LENGTHUNIT", None, "METRE")
        self.origin = f.createIfcAxis2Placement3D(f.createIfcCartesianPoint((0.0, 0.0, 0.0)))
        self.context = f.createIfcGeometricRepresentationContext(None, "Model", 3, 1e-5, self.origin, None)
        self.body = f.createIfcGeometricRepresentationSubContext("Body", "Model", None, None, None, None, self.context, None, "MODEL_VIEW", None)
        project = f.createIfcProject(self.new_guid(), None, name, RepresentationContexts=[self.context],
                                     UnitsInContext=f.createIfcUnitAssignment([unit]))
        self.site_placement = f.createIfcLocalPlacement(None, self.origin)
        site = f.createIfcSite(self.new_guid(), None, "Site", ObjectPlacement=self.site_placement)
        building = f.createIfcBuilding(self.new_guid(), None, "Building", ObjectPlacement=self.site_placement)
        f.createIfcRelAggregates(self.new_guid(), None, None, None, project, [site])
        f.createIfcRelAggregates(self.new_guid(), None, None, None, site, [building])
        self.building, self.storeys, self.contents = building, [], {}
        self.shapes: dict[tuple, object] = {}
        self.count = 0
        self.meshes: list[tuple[str, str, np.ndarray, np.ndarray]] = []  # (GlobalId, class, vertices, triangles)

    def storey(self, number: int):
        f = self.file
        storey = f.createIfcBuildingStorey(self.new_guid(), None, f"Level {number}", ObjectPlacement=self.site_placement,
                                           Elevation=number * STOREY)
        f.createIfcRelAggregates(self.new_guid(), None, None, None, self.building, [storey])
        self.contents[storey] = []
        return storey

    def _shape(self, key: tuple):
        known = self.shapes.get(key)
        if known is None:
            f = self.file
            if key[0] == "box":
                _, dx, dy, dz = key
                profile = f.createIfcRectangleProfileDef("AREA", None, None, dx, dy)
            else:
                _, radius, dz = key
                profile = f.createIfcCircleProfileDef("AREA", None, None, radius)
            solid = f.createIfcExtrudedAreaSolid(profile, self.origin, f.createIfcDirection((0.0, 0.0, 1.0)), dz)
            known = self.shapes[key] = f.createIfcShapeRepresentation(self.body, "Body", "SweptSolid", [solid])
        return known

    def _element(self, ifc_class: str, storey, placement, key: tuple, mesh: tuple[np.ndarray, np.ndarray]):
        f = self.file
        element = f.create_entity(ifc_class, GlobalId=self.new_guid(), Name=f"{ifc_class[3:]} {self.count}", ObjectPlacement=placement,
                                  Representation=f.createIfcProductDefinitionShape(None, None, [self._shape(key)]))
        self.contents[storey].append(element)
        self.meshes.append((element.GlobalId, ifc_class, *mesh))
        self.count += 1

    def box(self, ifc_class: str, storey, low, high):
        """An axis-aligned box (a rectangle extruded up from its bottom face's centre)."""
        f = self.file
        centre = ((low[0] + high[0]) / 2, (low[1] + high[1]) / 2, low[2])
        size = tuple(round(h - lo, 6) for lo, h in zip(low, high))
        placement = f.createIfcLocalPlacement(self.site_placement, f.createIfcAxis2Placement3D(f.createIfcCartesianPoint(centre)))
        self._element(ifc_class, storey, placement, ("box", *size), _box_mesh(low, high))

    def pipe_along_x(self, storey, start, length: float, radius: float):
        f = self.file
        axes = f.createIfcAxis2Placement3D(f.createIfcCartesianPoint(start), f.createIfcDirection((1.0, 0.0, 0.0)), f.createIfcDirection((0.0, 1.0, 0.0)))
        self._element("IfcPipeSegment", storey, f.createIfcLocalPlacement(self.site_placement, axes), ("pipe", radius, round(length, 6)),
                      _pipe_mesh(start, length, radius))

    def write_clash_geometry(self, path: Path) -> None:
        """clash-geometry.bin of the elements as generated (the same solids the IFC describes, a pipe as a prism of
        PIPE_SIDES sides), written directly: the conversion's meshing of tens of thousands of elements takes longer
        than the benchmark (--mesh-pair meshes the IFCs instead)."""
        from models_app.conversion.clash_geometry import ClashGeometryWriter

        with open(path, "wb") as handle:
            writer = ClashGeometryWriter(handle)
            for guid, ifc_class, vertices, faces in self.meshes:
                writer.element(guid, ifc_class, vertices, faces)
            writer.end()

    def write(self, path: Path) -> None:
        for storey, elements in self.contents.items():
            for start in range(0, len(elements), 5000):
                self.file.createIfcRelContainedInSpatialStructure(self.new_guid(), None, None, None, elements[start:start + 5000], storey)
        self.file.write(str(path))


_BOX_FACES = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                       [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]])


def _box_mesh(low, high) -> tuple[np.ndarray, np.ndarray]:
    corners = np.array([[x, y, z] for z in (low[2], high[2]) for y in (low[1], high[1]) for x in (low[0], high[0])], dtype=float)
    return corners, _BOX_FACES


def _pipe_mesh(start, length: float, radius: float) -> tuple[np.ndarray, np.ndarray]:
    """A prism of PIPE_SIDES sides along +x from start (its axis), closed by two fans."""
    angles = np.arange(PIPE_SIDES) * 2 * np.pi / PIPE_SIDES
    ring = np.c_[np.zeros(PIPE_SIDES), radius * np.cos(angles), radius * np.sin(angles)]
    vertices = np.concatenate([ring, ring + (length, 0, 0), [[0, 0, 0], [length, 0, 0]]]) + np.asarray(start, dtype=float)
    k = np.arange(PIPE_SIDES)
    nxt = (k + 1) % PIPE_SIDES
    sides = np.concatenate([np.c_[k, nxt, k + PIPE_SIDES], np.c_[nxt, nxt + PIPE_SIDES, k + PIPE_SIDES]])
    caps = np.concatenate([np.c_[np.full(PIPE_SIDES, 2 * PIPE_SIDES), nxt, k], np.c_[np.full(PIPE_SIDES, 2 * PIPE_SIDES + 1), k + PIPE_SIDES, nxt + PIPE_SIDES]])
    return vertices, np.concatenate([sides, caps])


def _grid(elements: int) -> tuple[int, int]:
    """(columns per side, floors) for about `elements` structure elements (3 n^2 - 2 n per floor)."""
    side = 19 if elements >= 2000 else max(3, int(math.sqrt(elements / 6)) + 1)
    per_floor = 3 * side * side - 2 * side
    return side, max(1, math.ceil(elements / per_floor))


def federated_pair(folder: Path, elements: int, kept: bool = True) -> tuple[Path, Path]:
    """structure.ifc and services.ifc with at least `elements` elements each. Structure: per floor, columns 0.4 m
    square on a BAY grid and beams 0.3 x 0.5 between them at the floor's top. Services: per bay, a duct along y
    0.4 x 0.3 crossing the beam at the bay's start 0.15 deep, a pipe along x under the beams and a box in the middle
    of the bay; a duct crossing each beam along x: clashes where known, nothing else near."""
    side, floors = _grid(elements)
    structure, services = _Model("Structure"), _Model("Services")
    while True:
        for floor in range(floors):
            base, top = floor * STOREY, floor * STOREY + STOREY
            s_storey, m_storey = structure.storey(floor), services.storey(floor)
            for i in range(side):
                for j in range(side):
                    x, y = i * BAY, j * BAY
                    structure.box("IfcColumn", s_storey, (x - 0.2, y - 0.2, base), (x + 0.2, y + 0.2, top - 0.5))
                    if i + 1 < side:
                        structure.box("IfcBeam", s_storey, (x + 0.2, y - 0.15, top - 0.5), (x + BAY - 0.2, y + 0.15, top))
                    if j + 1 < side:
                        structure.box("IfcBeam", s_storey, (x - 0.15, y + 0.2, top - 0.5), (x + 0.15, y + BAY - 0.2, top))
                    if i + 1 < side and j + 1 < side:
                        middle = x + BAY / 2
                        services.box("IfcDuctSegment", m_storey, (middle - 0.2, y - 0.5, top - 0.65), (middle + 0.2, y + BAY - 0.5, top - 0.35))
                        services.pipe_along_x(m_storey, (x + 0.5, y + BAY / 2, top - 1.0), BAY - 1.0, 0.05)
                        services.box("IfcFlowTerminal", m_storey, (middle - 0.3, y + BAY / 2 - 0.3, base + 0.1), (middle + 0.3, y + BAY / 2 + 0.3, base + 0.4))
        if services.count >= elements and structure.count >= elements:
            break
        floors += 1
        structure, services = _Model("Structure"), _Model("Services")
    paths = folder / "structure.ifc", folder / "services.ifc"
    structure.write(paths[0])
    services.write(paths[1])
    if kept:
        structure.write_clash_geometry(folder / "structure.bin")
        services.write_clash_geometry(folder / "services.bin")
    return paths


# --- running ------------------------------------------------------------------------------------------------------


def _child(code: str, spec: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", code, str(spec)], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _selected(ifc: Path, geometry: Path) -> list[str]:
    """The GlobalIds of the IfcElements but IfcFeatureElements with geometry (ifcclash's default selection); the app
    selects the same way (from metadata.json) before it runs a test."""
    import ifcopenshell

    from coordination_app.engine.geometry import load
    from coordination_app.engine.selection import select

    kept = load(geometry)
    return sorted(select(dict(zip(kept.guids, kept.types)), ifcopenshell.open(str(ifc)).schema, ["IfcElement"], ["IfcFeatureElement"]))


def bench(name: str, ifcs: list[Path], folder: Path, repeat: int) -> dict:
    from coordination_app.engine.geometry import build_clash_geometry

    sides = []
    started = time.perf_counter()
    for number, ifc in enumerate(ifcs):
        geometry = ifc.with_suffix(".bin")  # the generated pair's, when written with it
        if not geometry.exists():
            geometry = folder / f"{name.replace(' ', '-')}-{number}.bin"
            build_clash_geometry(ifc, geometry, threads=2)
        sides.append({"ifc": str(ifc), "geometry": str(geometry), "guids": _selected(ifc, geometry)})
    meshing = time.perf_counter() - started
    spec = folder / "spec.json"
    spec.write_text(json.dumps({"sides": sides, "tolerance": TOLERANCE}))
    ours = min((_child(OURS, spec) for _ in range(repeat)), key=lambda run: run["seconds"])
    theirs = min((_child(IFCCLASH, spec) for _ in range(repeat)), key=lambda run: run["seconds"])
    found, anchor = {tuple(p) for p in ours["pairs"]}, {tuple(p) for p in theirs["pairs"]}
    return {
        "test": name,
        "meshingSecondsNotTimed": round(meshing, 2),
        "ours": {"seconds": round(ours["seconds"], 3), "peakMB": round(ours["peakMB"], 1), "clashes": len(found)},
        "ifcclash": {"seconds": round(theirs["seconds"], 3), "peakMB": round(theirs["peakMB"], 1), "clashes": len(anchor)},
        "bothFound": len(found & anchor),
        "timeRatio": round(ours["seconds"] / theirs["seconds"], 3),
        "memoryRatio": round(ours["peakMB"] / theirs["peakMB"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", nargs="*", default=["duplex.ifc", "AC20-FZK-Haus.ifc"])
    parser.add_argument("--elements", type=int, default=20000, help="elements per side of the generated pair")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--mesh-pair", action="store_true", help="mesh the generated pair with the conversion's meshing "
                        "(tens of minutes at 20,000 a side) instead of writing its clash geometry as generated")
    parser.add_argument("--smoke", action="store_true", help="IfcOpenHouse and a ~300-element pair, once")
    args = parser.parse_args()
    if args.smoke:
        args.samples, args.elements, args.repeat = ["IfcOpenHouse_IFC4.ifc"], 300, 1
    import ifcopenshell

    report = {"anchor": f"ifcclash 0.9.0 (IfcOpenShell {ifcopenshell.version}), intersection, tolerance {TOLERANCE} m, check_all",
              "repeat": args.repeat, "tests": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tests = [(f"{name} against itself", [SAMPLES / name]) for name in args.samples]
        started = time.perf_counter()
        pair = federated_pair(folder, args.elements, kept=not args.mesh_pair)
        print(f"generated pair: {time.perf_counter() - started:.1f} s", file=sys.stderr)
        tests.append((f"generated pair >= {args.elements} elements each", list(pair)))
        for name, ifcs in tests:
            report["tests"].append(bench(name, ifcs, folder, args.repeat))
            result = report["tests"][-1]
            print(f"{name}: time x{result['timeRatio']}, memory x{result['memoryRatio']}", file=sys.stderr)
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
