"""IDS check speed: this service's engine against IfcOpenShell's ifctester (the anchor) on the same files and the
same IDS, in the same run, alternating, median of N.

    .venv/bin/python bench/ids_check.py [--repeat 3] [--storeys 20 --bays 6] [--ids FILE] [sample.ifc ...]
    .venv/bin/python bench/ids_check.py --smoke     # the smallest sample and a 2-storey tower, once: seconds

Default files: the larger samples of ../shared/ifc-samples (AC20-FZK-Haus.ifc, duplex.ifc) and a tower generated
from edit_service/examples/tower.py (run plainly, not in the sandbox). Default IDS:
checks_app/examples/review-basics.ids (13 specifications). Per file it prints JSON with
- ours: ifcopenshell.open + check_model (ifctester's facets with the corrections, the verdicts and the API result
  with found/expected per failure), in this process;
- ifctester: ifcopenshell.open + ids.open + Ids.validate + its JSON reporter (its own run, with its failures);
- ratio = ours / ifctester (below 1: faster); ifctester_validate_only: the same without its reporter;
- ours_in_child: the same check the way the worker runs it (child process: interpreter start, imports, limits);
- differing_verdicts: specifications where the two disagree (where the corrections apply).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# the runner reaches ConversionLimits through models_app's public surface, which loads Django's models
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "viewer_gateway.settings")
import django  # noqa: E402

django.setup()

import ifcopenshell  # noqa: E402
from ifctester import ids as ifctester_ids  # noqa: E402
from ifctester import reporter as ifctester_reporter  # noqa: E402

from checks_app.engine.ids_engine import IdsSource, check_model  # noqa: E402
from checks_app.engine.runner import run_check_process  # noqa: E402
from models_app.conversion.sandbox import ConversionLimits  # noqa: E402

SAMPLES = ROOT.parent / "shared" / "ifc-samples"
DEFAULT_SAMPLES = ("AC20-FZK-Haus.ifc", "duplex.ifc")
SMOKE_SAMPLE = "IfcOpenHouse_IFC4.ifc"
DEFAULT_IDS = ROOT / "checks_app" / "examples" / "review-basics.ids"


def build_tower(folder: Path, storeys: int, bays: int) -> Path:
    from edit_service.engine.sandbox import SANDBOX_CODE_DIR
    from edit_service.engine.scripts import read_params

    script = (ROOT / "edit_service" / "examples" / "tower.py").read_text()
    params = {**read_params(script), "storeys": storeys, "bays_x": bays, "bays_y": bays}
    (folder / "script.py").write_text(script)
    (folder / "params.json").write_text(json.dumps(params))
    with open(folder / "outputs.bin", "wb") as outputs:
        subprocess.run(
            [sys.executable, str(SANDBOX_CODE_DIR / "run_build.py"), "script.py", "params.json", "out.ifc", "--outputs-fd", str(outputs.fileno())],
            cwd=folder, env={"PYTHONPATH": str(SANDBOX_CODE_DIR), "PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"}, check=True,
            pass_fds=(outputs.fileno(),),
        )
    tower = folder / f"tower-{storeys}x{bays}x{bays}.ifc"
    (folder / "out.ifc").rename(tower)
    return tower


def run_ours(ifc_path: Path, ids_path: Path) -> tuple[float, dict]:
    started = time.perf_counter()
    result = check_model(ifcopenshell.open(str(ifc_path)), [IdsSource(ids_path.name, ids_path.read_text(encoding="utf-8"))])
    return time.perf_counter() - started, {spec["name"]: spec["status"] == "pass" for spec in result["specifications"]}


def run_ifctester(ifc_path: Path, ids_path: Path) -> tuple[float, float, dict]:
    started = time.perf_counter()
    document = ifctester_ids.open(str(ids_path))
    ifc = ifcopenshell.open(str(ifc_path))  # kept: the reporter reads the elements after validate
    document.validate(ifc)
    validated = time.perf_counter() - started
    report = ifctester_reporter.Json(document)
    report.report()
    elapsed = time.perf_counter() - started
    del ifc
    return elapsed, validated, {spec.name: bool(spec.status) for spec in document.specifications}


def run_child(ifc_path: Path, ids_path: Path, folder: Path) -> float:
    job = {"ids": [{"name": ids_path.name, "content": ids_path.read_text(encoding="utf-8")}], "overrides": None}
    with tempfile.TemporaryDirectory(dir=folder) as work_dir:
        started = time.perf_counter()
        outcome = run_check_process(ifc_path=ifc_path, job=job, work_dir=Path(work_dir), timeout_seconds=1800,
                                    limits=ConversionLimits(memory_mb=8192), on_progress=lambda phase, percent: None)
        elapsed = time.perf_counter() - started
    assert outcome.ok, outcome.error
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--storeys", type=int, default=20)
    parser.add_argument("--bays", type=int, default=6)
    parser.add_argument("--ids", type=Path, default=DEFAULT_IDS)
    parser.add_argument("samples", nargs="*", type=Path)
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_SAMPLE} and a 2-storey tower, once")
    args = parser.parse_args()
    samples = DEFAULT_SAMPLES
    if args.smoke:
        samples, args.repeat, args.storeys, args.bays = (SMOKE_SAMPLE,), 1, 2, 2
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = args.samples or [SAMPLES / name for name in samples if (SAMPLES / name).exists()] + [build_tower(folder, args.storeys, args.bays)]
        specifications = len(ifctester_ids.open(str(args.ids)).specifications)
        for path in files:
            ours, anchor, anchor_validate, child = [], [], [], []
            for _ in range(args.repeat):
                seconds, our_verdicts = run_ours(path, args.ids)
                ours.append(seconds)
                seconds, validate_seconds, their_verdicts = run_ifctester(path, args.ids)
                anchor.append(seconds)
                anchor_validate.append(validate_seconds)
                child.append(run_child(path, args.ids, folder))
            ours_median, anchor_median = statistics.median(ours), statistics.median(anchor)
            print(json.dumps({
                "file": path.name, "sizeMB": round(path.stat().st_size / 1e6, 2), "elements": len(ifcopenshell.open(str(path)).by_type("IfcProduct")),
                "specifications": specifications, "repeat": args.repeat,
                "ours_s": round(ours_median, 3), "ifctester_s": round(anchor_median, 3), "ratio": round(ours_median / anchor_median, 2),
                "ifctester_validate_only_s": round(statistics.median(anchor_validate), 3),
                "ours_in_child_s": round(statistics.median(child), 3),
                "differing_verdicts": sorted(name for name in our_verdicts if our_verdicts[name] != their_verdicts.get(name)),
            }), flush=True)


if __name__ == "__main__":
    main()
