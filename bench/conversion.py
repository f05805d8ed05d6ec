"""Conversion benchmark: this pipeline (warm sandboxed zygote + node, streamed) against xeokit-convert's own
convert2xkt run directly on the IFC, in the same run, on every sample and on towers generated from
edit_service/examples/tower.py (PARAMS storeys x bays scale them), plus one large tower converted by the pipeline
alone (the anchor would take far too long there).

    .venv/bin/python bench/conversion.py [--repeat 3] [--towers 10x4,40x12,70x20,100x30] [--large 200x73] [sample.ifc ...]
    .venv/bin/python bench/conversion.py --smoke     # the smallest sample and two tiny towers, once: seconds

Ours: one long-lived `python -m models_app.conversion.runner --serve` (a worker's conversion code, its zygote already
warm as in a running worker), one conversion after the other; the anchor: `node convert2xkt.js -s IFC -o XKT`. The two
alternate per file. Time is wall time; memory is the peak, sampled every 20 ms, of the whole process tree summed as PSS
(proportional set size: pages shared between processes, like the zygote's and its forked child's, counted once in
total) and, for reference, as RSS. Files over --repeat-below MB run once each. Prints JSON per file (both ratios),
a table of how time and memory grow with element count, and writes bench/results/conversion.json and
bench/results/conversion-growth.png (--smoke: in a temporary folder, so a smoke run leaves the full run's results).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edit_service.engine.sandbox import Sandbox, SandboxLimits  # noqa: E402
from edit_service.engine.scripts import read_params  # noqa: E402
from models_app.conversion.sandbox import ConversionLimits  # noqa: E402

SAMPLES = ROOT.parent / "shared" / "ifc-samples"
CONVERT2XKT = ROOT / "converter" / "node_modules" / "@xeokit" / "xeokit-convert" / "convert2xkt.js"
TOWER = ROOT / "edit_service" / "examples" / "tower.py"
RESULTS = ROOT / "bench" / "results"
MB = 2**20
SMOKE_SAMPLE = "IfcOpenHouse_IFC4.ifc"


class TreeSampler:
    """Peak PSS and RSS of a process and all its descendants, sampled in a thread."""

    def __init__(self, root: psutil.Process, interval: float = 0.02):
        self.root, self.interval = root, interval
        self.peak_pss = self.peak_rss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            pss = rss = 0
            try:
                for process in [self.root, *self.root.children(recursive=True)]:
                    try:
                        info = process.memory_full_info()
                        pss, rss = pss + info.pss, rss + info.rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                pass
            self.peak_pss, self.peak_rss = max(self.peak_pss, pss), max(self.peak_rss, rss)
            self._stop.wait(self.interval)

    def __enter__(self) -> "TreeSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def figures(self) -> dict:
        return {"peakPSSMB": round(self.peak_pss / MB, 1), "peakRSSMB": round(self.peak_rss / MB, 1)}


class Pipeline:
    """The warm conversion process; convert() sends one job and samples the whole tree until it ends."""

    def __init__(self, memory_mb: int):
        self.process = psutil.Popen(
            [sys.executable, "-m", "models_app.conversion.runner", "--serve", "--memory-mb", str(memory_mb)],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )
        self.start_seconds = json.loads(self.process.stdout.readline())["ready"]

    def idle_pss_mb(self) -> float:
        time.sleep(0.5)
        with TreeSampler(self.process) as sampler:
            time.sleep(0.3)
        return sampler.figures()["peakPSSMB"]

    def convert(self, ifc: Path, out: Path) -> dict:
        started = time.perf_counter()
        progress_times, last_progress = [], None
        with TreeSampler(self.process) as sampler:
            self.process.stdin.write(f"{ifc}\t{out}\n")
            while True:
                event = json.loads(self.process.stdout.readline())
                if "end" in event:
                    break
                if (event["phase"], event["percent"]) != last_progress:
                    progress_times.append(event["seconds"])
                    last_progress = (event["phase"], event["percent"])
        if not event["ok"]:
            raise RuntimeError(f"conversion of {ifc.name} failed: {event['error'][-500:]}")
        gaps = [b - a for a, b in zip([0.0, *progress_times], progress_times)]
        return {"seconds": round(time.perf_counter() - started, 3), **sampler.figures(), "longestProgressGapSeconds": round(max(gaps, default=0), 2)}

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def anchor(ifc: Path, out: Path) -> dict:
    started = time.perf_counter()
    process = psutil.Popen(["node", str(CONVERT2XKT), "-s", str(ifc), "-o", str(out / "direct.xkt")], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with TreeSampler(process) as sampler:
        _, stderr = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"convert2xkt failed on {ifc.name}: {stderr.decode()[-500:]}")
    return {"seconds": round(time.perf_counter() - started, 3), **sampler.figures()}


def tower(storeys: int, bays: int, results: Path) -> Path:
    """tower.py built in the edit service's sandbox, kept under results/towers/ for later runs."""
    script = TOWER.read_text()
    path = results / "towers" / f"tower-{storeys}x{bays}-{hashlib.sha256(script.encode()).hexdigest()[:8]}.ifc"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"generating {path.name} ...", file=sys.stderr)
        limits = SandboxLimits(wall_seconds=3600, cpu_seconds=3600, memory_mb=16384, output_mb=4096, file_size_mb=4096)
        with tempfile.TemporaryDirectory() as tmp:
            ifc, _, _ = Sandbox(limits).build(script, {**read_params(script), "storeys": storeys, "bays_x": bays, "bays_y": bays}, Path(tmp))
            ifc.rename(path)
    return path


def elements(out: Path) -> int:
    return len(json.loads((out / "metadata.json").read_text())["metaObjects"])


def median_of(runs: list[dict]) -> dict:
    return {key: round(statistics.median(run[key] for run in runs), 3) for key in runs[0]}


def bench_file(pipeline: Pipeline, ifc: Path, repeat: int, with_anchor: bool) -> dict:
    ours, theirs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for _ in range(repeat):
            ours.append(pipeline.convert(ifc, out))
            if with_anchor:
                theirs.append(anchor(ifc, out))
        result = {"fileMB": round(ifc.stat().st_size / MB, 1), "elements": elements(out), "pipeline": median_of(ours)}
    if with_anchor:
        result["convert2xkt"] = median_of(theirs)
        result["ratio"] = {
            "time": round(result["pipeline"]["seconds"] / result["convert2xkt"]["seconds"], 3),
            "memory": round(result["pipeline"]["peakPSSMB"] / result["convert2xkt"]["peakPSSMB"], 3),
            "memoryRSS": round(result["pipeline"]["peakRSSMB"] / result["convert2xkt"]["peakRSSMB"], 3),
        }
    return result


def growth_table(files: dict) -> str:
    rows = sorted(((name, r) for name, r in files.items() if name.startswith("tower")), key=lambda item: item[1]["elements"])
    lines = ["| file | elements | MB | pipeline s | pipeline peak MB | convert2xkt s | convert2xkt peak MB | time ratio | memory ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in rows:
        anchor_figures = r.get("convert2xkt", {})
        lines.append(f"| {name} | {r['elements']:,} | {r['fileMB']} | {r['pipeline']['seconds']} | {r['pipeline']['peakPSSMB']} | "
                     f"{anchor_figures.get('seconds', '-')} | {anchor_figures.get('peakPSSMB', '-')} | "
                     f"{r.get('ratio', {}).get('time', '-')} | {r.get('ratio', {}).get('memory', '-')} |")
    return "\n".join(lines)


def slopes(files: dict) -> dict:
    """Least-squares growth per 1,000 elements over the towers (seconds and MB), for both converters."""
    towers = [r for name, r in files.items() if name.startswith("tower")]

    def fit(points):
        if len(points) < 2:
            return None
        mean_x, mean_y = statistics.mean(x for x, _ in points), statistics.mean(y for _, y in points)
        return round(1000 * sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points), 3)

    out = {}
    for who in ("pipeline", "convert2xkt"):
        measured = [r for r in towers if who in r]
        out[who] = {"secondsPer1000Elements": fit([(r["elements"], r[who]["seconds"]) for r in measured]),
                    "peakMBPer1000Elements": fit([(r["elements"], r[who]["peakPSSMB"]) for r in measured])}
    return out


def plot(files: dict, path: Path) -> bool:
    """Writes the growth plot; False when the run had no towers to plot."""
    towers = sorted((r for name, r in files.items() if name.startswith("tower")), key=lambda r: r["elements"])
    if not towers:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (time_axis, memory_axis) = plt.subplots(1, 2, figsize=(11, 4.2))
    for who, style in (("pipeline", "o-"), ("convert2xkt", "s--")):
        measured = [r for r in towers if who in r]
        xs = [r["elements"] for r in measured]
        time_axis.plot(xs, [r[who]["seconds"] for r in measured], style, label=who)
        memory_axis.plot(xs, [r[who]["peakPSSMB"] for r in measured], style, label=who)
    for axis, label in ((time_axis, "wall time (s)"), (memory_axis, "peak memory, process tree PSS (MB)")):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("elements (IfcProduct + project)")
        axis.set_ylabel(label)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend()
    figure.suptitle("IFC -> XKT: generated towers (edit_service/examples/tower.py)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return True


def parse_towers(text: str) -> list[tuple[int, int]]:
    return [tuple(int(part) for part in item.split("x")) for item in text.split(",") if item]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("samples", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--repeat-below", type=float, default=10, help="files over this many MB run once each")
    parser.add_argument("--towers", default="10x4,40x12,70x20,100x30", help="storeys x bays, converted by both")
    parser.add_argument("--anchor-max-mb", type=float, default=32, help="larger files are converted by the pipeline alone")
    parser.add_argument("--large", default="", help="towers (storeys x bays) converted by the pipeline alone, e.g. 200x73 (~150 MB)")
    parser.add_argument("--memory-mb", type=int, default=ConversionLimits.memory_mb, help="the conversion memory cap")
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_SAMPLE} and towers 1x2, 2x2, once, results in a temporary folder")
    args = parser.parse_args()
    if not args.smoke:
        run(args, RESULTS)
        return
    args.samples, args.towers, args.large, args.repeat = [SAMPLES / SMOKE_SAMPLE], "1x2,2x2", "", 1
    with tempfile.TemporaryDirectory(prefix="bench-conversion-") as tmp:
        run(args, Path(tmp))


def run(args: argparse.Namespace, results: Path) -> None:
    results.mkdir(parents=True, exist_ok=True)
    files = {path.name: path for path in (args.samples if args.samples else sorted(SAMPLES.glob("*.ifc")))}
    files |= {f"tower-{s}x{b}": tower(s, b, results) for s, b in parse_towers(args.towers)}
    large = {f"tower-{s}x{b}": tower(s, b, results) for s, b in parse_towers(args.large)}
    pipeline = Pipeline(args.memory_mb)
    report = {
        "anchor": "xeokit-convert convert2xkt, IFC parsed directly (web-ifc)",
        "memory": "peak of the whole process tree, PSS (RSS for reference)",
        "zygoteStartSeconds": pipeline.start_seconds,
        "idleWarmPipelinePSSMB": pipeline.idle_pss_mb(),
        "files": {},
    }
    try:
        for name, path in {**files, **large}.items():
            size_mb = path.stat().st_size / MB
            with_anchor = name not in large and size_mb <= args.anchor_max_mb
            result = bench_file(pipeline, path, args.repeat if size_mb <= args.repeat_below else 1, with_anchor)
            if name in large:
                result["memoryCapMB"] = args.memory_mb
                result["conversionTimeoutSeconds"] = 1800
            report["files"][name] = result
            print(f"{name}: {json.dumps(result.get('ratio') or result['pipeline'])}", file=sys.stderr, flush=True)
    finally:
        pipeline.close()
    report["growth"] = slopes(report["files"])
    (results / "conversion.json").write_text(json.dumps(report, indent=2))
    plotted = plot(report["files"], results / "conversion-growth.png")
    print(json.dumps(report, indent=2))
    print(growth_table(report["files"]))
    print(f"growth per 1,000 elements: {json.dumps(report['growth'])}")
    print(f"written: {results / 'conversion.json'}" + (f", {results / 'conversion-growth.png'}" if plotted else " (no towers, no plot)"))


if __name__ == "__main__":
    main()
