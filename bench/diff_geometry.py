"""Geometry-aware semantic diff benchmark: this engine (snapshot with geometry + engine/semantic_diff.py) against
IfcOpenShell's ifcdiff as it compares geometry by default (relationships attributes + geometry), same pairs, same run.

    .venv/bin/python bench/diff_geometry.py [--samples duplex.ifc AC20-FZK-Haus.ifc] [--towers 2000] [--repeat 3]
    .venv/bin/python bench/diff_geometry.py --smoke     # the skeleton pair only, once: seconds

Pairs: the project skeleton (models_app/skeletons/ifc_project.py) 8 m and 9.5 m wide (expected changed: the slab,
north, west and east walls); each real sample (/work/shared/ifc-samples) and each generated tower (tower.py) with one
element moved 1.5 m along X and another renamed (edited with ifcopenshell). Prints JSON: per pair both times (files
already opened), the changed GlobalIds found against the expected ones, the ratio ifcdiff/ours, and the extra time
geometry costs our snapshot (with vs without geometry, both files).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ifcopenshell  # noqa: E402
import ifcopenshell.api  # noqa: E402
import ifcopenshell.util.unit  # noqa: E402
from ifcdiff import IfcDiff  # noqa: E402

from bench.semantic_diff import timed, tower_params  # noqa: E402
from edit_service.engine.sandbox import Sandbox, SandboxLimits  # noqa: E402
from edit_service.engine.scripts import read_params  # noqa: E402
from edit_service.engine.semantic_diff import diff_snapshots  # noqa: E402
from edit_service.sandbox.script_lib import guid_for  # noqa: E402
from edit_service.sandbox.snapshot import snapshot  # noqa: E402

SAMPLES = Path("/work/shared/ifc-samples")
SKELETON = ROOT / "models_app" / "skeletons" / "ifc_project.py"
TOWER = ROOT / "edit_service" / "examples" / "tower.py"


def sandbox() -> Sandbox:
    return Sandbox(SandboxLimits(wall_seconds=600, cpu_seconds=600))


def skeleton_pair(folder: Path) -> tuple[Path, Path, list[str]]:
    script = SKELETON.read_text()
    params = read_params(script)
    paths = []
    for width in (8.0, 9.5):
        run = folder / f"w{width}"
        run.mkdir()
        paths.append(sandbox().build(script, {**params, "width": width}, run)[0])
    return paths[0], paths[1], sorted(guid_for(key) for key in ("slab-0", "wall-north-0", "wall-west-0", "wall-east-0"))


def movable(model) -> list:
    """Elements with a body whose placement no other placement is relative to (moving one moves nothing else)."""
    return [p for p in model.by_type("IfcElement") if p.Representation and p.ObjectPlacement and p.ObjectPlacement.is_a("IfcLocalPlacement")
            and not p.ObjectPlacement.ReferencedByPlacements and not p.is_a("IfcOpeningElement")]


def edited_pair(source: Path, folder: Path) -> tuple[Path, Path, list[str]]:
    """source and a copy with one element moved 1.5 m along X (a new point, so nothing shared moves) and one renamed."""
    model = ifcopenshell.open(str(source))
    candidates = movable(model)
    moved, renamed = candidates[len(candidates) // 2], candidates[len(candidates) // 3]
    relative = moved.ObjectPlacement.RelativePlacement
    step = 1.5 / ifcopenshell.util.unit.calculate_unit_scale(model)
    x, y, *z = relative.Location.Coordinates
    relative.Location = model.createIfcCartesianPoint((x + step, y, *z))
    renamed.Name = "Renamed by the benchmark"
    edited = folder / f"edited-{source.name}"
    model.write(str(edited))
    return source, edited, sorted({moved.GlobalId, renamed.GlobalId})


def tower_pair(folder: Path, elements: int) -> tuple[Path, Path, list[str]]:
    script = TOWER.read_text()
    run = folder / f"tower-{elements}"
    run.mkdir()
    base = sandbox().build(script, tower_params(script, elements), run)[0]
    return edited_pair(base, folder)


def run_ifcdiff(old, new) -> list[str]:
    differ = IfcDiff(old, new, relationships=["attributes", "geometry"], is_shallow=True)
    with contextlib.redirect_stdout(io.StringIO()):
        differ.diff()
    return sorted(differ.change_register)


def run_ours(old, new) -> tuple[list[str], dict]:
    """The changed GlobalIds, and per changed element what the diff says in words."""
    diff = diff_snapshots(snapshot(old), snapshot(new))
    said = {item["guid"]: "; ".join(c.get("summary") or f"{c['field']} changed" for c in item["changes"]) for item in diff["changed"]}
    return sorted(said), said


def bench(name: str, base: Path, target: Path, expected: list[str], repeat: int) -> dict:
    old, new = ifcopenshell.open(str(base)), ifcopenshell.open(str(target))
    ours_seconds, (ours, facts) = timed(lambda: run_ours(old, new), repeat)
    theirs_seconds, theirs = timed(lambda: run_ifcdiff(old, new), repeat)
    plain_seconds, _ = timed(lambda: (snapshot(old, with_geometry=False), snapshot(new, with_geometry=False)), repeat)
    return {
        "pair": name,
        "elements": len(old.by_type("IfcProduct")),
        "expectedChanged": len(expected),
        "ours": {"seconds": round(ours_seconds, 3), "changed": len(ours), "exact": ours == expected,
                 "said": {guid: facts[guid] for guid in expected if guid in facts}},
        "ifcdiff": {"seconds": round(theirs_seconds, 3), "changed": len(theirs), "exact": theirs == expected},
        "oursWithoutGeometrySeconds": round(plain_seconds, 3),
        "speedup": round(theirs_seconds / ours_seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", nargs="*", default=["IfcOpenHouse_IFC4.ifc", "duplex.ifc", "AC20-FZK-Haus.ifc"])
    parser.add_argument("--towers", type=int, nargs="*", default=[2000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="the skeleton pair only, once")
    args = parser.parse_args()
    if args.smoke:
        args.samples, args.towers, args.repeat = [], [], 1
    report = {"anchor": f"ifcdiff (IfcOpenShell {ifcopenshell.version}), relationships attributes + geometry", "repeat": args.repeat, "pairs": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pairs = [("skeleton width 8 -> 9.5 m", *skeleton_pair(folder))]
        pairs += [(f"{name}, one moved + one renamed", *edited_pair(SAMPLES / name, folder)) for name in args.samples]
        pairs += [(f"tower ~{size}, one moved + one renamed", *tower_pair(folder, size)) for size in args.towers]
        for name, base, target, expected in pairs:
            report["pairs"].append(bench(name, base, target, expected, args.repeat))
            print(f"{name}: {report['pairs'][-1]['speedup']}x", file=sys.stderr)
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
