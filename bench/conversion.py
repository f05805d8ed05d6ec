"""Conversion benchmark: this pipeline (ifcopenshell metadata + GLB, xeokit-convert glTF path) against xeokit-convert's
own convert2xkt run directly on the IFC, on every sample, in the same run.

    .venv/bin/python bench/conversion.py [--repeat N] [sample.ifc ...]

Prints JSON: per sample the wall time and peak RSS (whole process tree) of both, their ratios (pipeline / anchor;
target <= 0.5 on duplex and AC20-FZK-Haus), and how rich each metadata is.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from viewer_gateway.config import SHIPPED_CONVERTER as CONVERTER  # noqa: E402

SAMPLES = ROOT.parent / "shared" / "ifc-samples"
CONVERT2XKT = ROOT / "converter" / "node_modules" / "@xeokit" / "xeokit-convert" / "convert2xkt.js"


def measure(command: list[str]) -> dict:
    """Wall time and peak resident memory of the process tree, sampled every 20 ms."""
    started = time.perf_counter()
    process = psutil.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while process.poll() is None:
        try:
            tree = [process, *process.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.02)
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"{command[:3]} failed: {process.stderr.read().decode()[-500:]}")
    return {"seconds": round(seconds, 3), "peakRSSMB": round(peak / 2**20, 1)}


def metadata_richness(metadata: dict) -> dict:
    rows = [row for p in metadata.get("propertySets", []) for row in p.get("properties", [])]
    return {
        "metaObjects": len(metadata.get("metaObjects", [])),
        "propertySets": len(metadata.get("propertySets", [])),
        "properties": len(rows),
        "numericTypeCodes": sum(str(row.get("type", "")).isdigit() or isinstance(row.get("type"), int) for row in rows),
        "projectIdIsGlobalId": any(o["id"] == metadata.get("projectId") for o in metadata.get("metaObjects", [])),
    }


def bench_sample(path: Path, repeat: int) -> dict:
    ours, anchor = [], []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for _ in range(repeat):
            ours.append(measure([sys.executable, "-m", "models_app.conversion.runner", "--ifc", str(path), "--out", str(work)]))
            anchor.append(measure(["node", str(CONVERT2XKT), "-s", str(path), "-o", str(work / "direct.xkt")]))
        our_metadata = json.loads((work / "metadata.json").read_text())
        subprocess.run(["node", str(CONVERTER), "--source", str(path), "--output", str(work / "x.xkt"), "--metadata-out", str(work / "direct.json")], check=True, capture_output=True)
        direct_metadata = json.loads((work / "direct.json").read_text())

    def median(runs, key):
        return round(statistics.median(run[key] for run in runs), 3)

    result = {
        "pipeline": {"seconds": median(ours, "seconds"), "peakRSSMB": median(ours, "peakRSSMB")},
        "convert2xkt": {"seconds": median(anchor, "seconds"), "peakRSSMB": median(anchor, "peakRSSMB")},
    }
    result["ratio"] = {
        "time": round(result["pipeline"]["seconds"] / result["convert2xkt"]["seconds"], 3),
        "memory": round(result["pipeline"]["peakRSSMB"] / result["convert2xkt"]["peakRSSMB"], 3),
    }
    result["metadata"] = {"pipeline": metadata_richness(our_metadata), "convert2xkt": metadata_richness(direct_metadata)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("samples", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    samples = args.samples or sorted(SAMPLES.glob("*.ifc"))
    report = {"anchor": "xeokit-convert convert2xkt, IFC parsed directly (web-ifc)", "repeat": args.repeat, "samples": {}}
    for path in samples:
        report["samples"][path.name] = bench_sample(path, args.repeat)
        print(f"{path.name}: {json.dumps(report['samples'][path.name]['ratio'])}", file=sys.stderr)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
