"""IDS check speed at scale: this service's engine (facets over a per-model index, checks_app/engine/ids_index.py)
against the engine before the index (ifctester's own validate under the same corrections) and IfcOpenShell's
ifctester (the anchor), on the same files and the same IDS, in the same run, alternating, median of N; then a check
as the worker runs it, in the warm sandboxed check process, and through the API (POST to done).

    .venv/bin/python bench/ids_check.py [--repeat 3] [--storeys 105 --bays 30] [--ids FILE] [--no-api] [--api-seen] [--poll] [--tower-only] [sample.ifc ...]
    .venv/bin/python bench/ids_check.py --smoke     # IfcOpenHouse and a 2-storey tower, once: seconds

Default files: the samples AC20-FZK-Haus.ifc, duplex.ifc and example.ifc of ../shared/ifc-samples, and a tower made
by edit_service/examples/tower.py (105 storeys of 30x30 bays: 25,296 products, 32 MB) to which enrich_tower adds
wall and window types with property sets, materials (layer sets), Uniclass references and proxies. Default IDS:
checks_app/examples/review-at-scale.ids (27 specifications: attributes with patterns, properties of occurrences and
types, classifications, materials, part-of, applicability by property, classification, material and attribute).

Each figure is measured in a fresh process (`--measure KIND FILE IDS`), which also reports its peak memory (VmHWM
from just before the IFC is opened to the end: the interpreter, the imports and the model included). Per file it prints JSON with
- ifctester_validate_s (anchor): Ids.validate on the opened model (its IDS parsed before, not counted);
- before_s: the engine without the index (ifctester's validate with the corrections, then the API result), its
  IDS parsed before as ifctester's;
- after_s: the engine over the index (every specification evaluated, the API result built, the failing elements'
  locations), its IDS parsed before; ratio = after_s / ifctester_validate_s; speedup = before_s / after_s;
- ids_parse_s: the engine's parse of the IDS (ifctester's parser on the schema built once per process);
- same_result: the whole API result of before and after is identical (verdicts, counts, every failure's text);
- open_s: ifcopenshell.open of the file (paid by every check, by ifctester's too);
- engine_s: open + IDS parse + check over the index, in a fresh process: what a check's process does;
- sandbox_s: the same through checks_app.engine.runner (a child forked from the warm, sandboxed check zygote);
- api_s: POST /api/v1/models/{id}/checks (the IDS uploaded) to the check being done, read with a GET of the check
  that waits for its end (?waitSeconds=30, again while it is still queued or running; --poll: a GET every 10 ms
  instead, as before), with a check worker (manage.py check_worker) of a stack started for the run, idle for 0.3 s
  before each API check (as between a user's checks);
  api_ratio = api_s / engine_s; each run's IDS has a new title (bytes the gateway has not seen);
- api_seen_s (--api-seen): the same with the IDS's own bytes, which the gateway has seen (a team running its IDS
  again), under a new upload name each run so no earlier check answers; api_seen_ratio = api_seen_s / engine_s;
- peak_mb of ifctester, before and after; differing_verdicts: specifications where ifctester's own verdict differs
  (where the engine's corrections apply).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
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

SAMPLES = ROOT.parent / "shared" / "ifc-samples"
DEFAULT_SAMPLES = ("AC20-FZK-Haus.ifc", "duplex.ifc", "example.ifc")
SMOKE_SAMPLE = "IfcOpenHouse_IFC4.ifc"
DEFAULT_IDS = ROOT / "checks_app" / "examples" / "review-at-scale.ids"
POLL_SECONDS = 0.01  # the API figure's client poll (--poll): at 50 ms it added 25 ms on average to checks of 0.2-0.6 s
WAIT_SECONDS = 30  # the API figure's GET waits for the check's end (?waitSeconds=N) at most this long, then asks again
# each API check starts with the worker idle, as a user's next check does: one posted within ~50 ms of the last one's
# end waits for that child's exit and for the next spare child (its fork, cgroup join and memory copy)
IDLE_BEFORE_API_SECONDS = 0.3


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
    return enrich_tower(tower)


def enrich_tower(path: Path) -> Path:
    """What the tower script does not make, added so the IDS touches it: wall and window types carrying property
    sets (Pset_WallCommon.FireRating, ThermalTransmittance; Pset_WindowCommon.FireRating), materials (layer sets
    through the wall types, glass through the window type, concrete or timber on the slabs), Uniclass 2015
    classification references (on walls and slabs, on the window type) and three proxies. Some elements are left
    without, or get a failing value, so each specification has passes and failures. Deterministic (GlobalIds from
    names), written over the file."""
    import uuid

    import ifcopenshell
    import ifcopenshell.guid

    ifc = ifcopenshell.open(str(path))
    owner = (ifc.by_type("IfcOwnerHistory") or [None])[0]

    def rooted(ifc_class: str, key: str, **attributes):
        guid = ifcopenshell.guid.compress(uuid.uuid5(uuid.NAMESPACE_URL, f"ids-bench/{key}").hex)
        return ifc.create_entity(ifc_class, GlobalId=guid, OwnerHistory=owner, **attributes)

    def pset(key: str, name: str, values: dict):
        properties = [ifc.create_entity("IfcPropertySingleValue", Name=prop, NominalValue=ifc.create_entity(kind, value))
                      for prop, (kind, value) in values.items()]
        return rooted("IfcPropertySet", key, Name=name, HasProperties=properties)

    concrete, brick, glass, timber = (ifc.create_entity("IfcMaterial", Name=name) for name in ("Concrete", "Brick", "Glass", "Timber"))

    def layer_set(name: str, material):
        layer = ifc.create_entity("IfcMaterialLayer", Material=material, LayerThickness=0.25)
        return ifc.create_entity("IfcMaterialLayerSet", MaterialLayers=[layer], LayerSetName=name)

    wall_types = [
        rooted("IfcWallType", "type-concrete", Name="Concrete 250", PredefinedType="SOLIDWALL", HasPropertySets=[
            pset("type-concrete-pset", "Pset_WallCommon", {"FireRating": ("IfcLabel", "REI60"), "ThermalTransmittance": ("IfcThermalTransmittanceMeasure", 0.35)})]),
        rooted("IfcWallType", "type-brick", Name="Brick 300", PredefinedType="SOLIDWALL", HasPropertySets=[
            pset("type-brick-pset", "Pset_WallCommon", {"FireRating": ("IfcLabel", "REI30"), "ThermalTransmittance": ("IfcThermalTransmittanceMeasure", 0.45)})]),
    ]
    window_type = rooted("IfcWindowType", "type-window", Name="Window 1500", PredefinedType="WINDOW", PartitioningType="SINGLE_PANEL",
                         HasPropertySets=[pset("type-window-pset", "Pset_WindowCommon", {"FireRating": ("IfcLabel", "E30")})])
    uniclass = ifc.create_entity("IfcClassification", Name="Uniclass 2015", Edition="1.0")

    def reference(identification: str, name: str):
        return ifc.create_entity("IfcClassificationReference", Identification=identification, Name=name, ReferencedSource=uniclass)

    walls, slabs, windows = ifc.by_type("IfcWall"), ifc.by_type("IfcSlab"), ifc.by_type("IfcWindow")
    typed = {0: [], 1: []}
    for index, wall in enumerate(walls):
        if index % 11:
            typed[int(index % 7 == 0)].append(wall)
    for number, (kind, objects) in enumerate(((wall_types[0], typed[0]), (wall_types[1], typed[1]), (window_type, [w for i, w in enumerate(windows) if i % 5]))):
        rooted("IfcRelDefinesByType", f"defines-{number}", RelatingType=kind, RelatedObjects=objects)
    for number, (material, objects) in enumerate((
        (layer_set("Concrete 250", concrete), [wall_types[0]]), (layer_set("Brick 300", brick), [wall_types[1]]), (glass, [window_type]),
        (concrete, [slab for i, slab in enumerate(slabs) if i % 10 != 9]), (timber, [slab for i, slab in enumerate(slabs) if i % 10 == 9]),
    )):
        rooted("IfcRelAssociatesMaterial", f"material-{number}", RelatingMaterial=material, RelatedObjects=objects)
    for number, (ref, objects) in enumerate((
        (reference("EF_25_10", "External walls"), [wall for i, wall in enumerate(walls) if i % 13]),
        (reference("EF_30_20", "Floors"), [slab for i, slab in enumerate(slabs) if i % 4]),
        (reference("EF_25_30", "Doors and windows"), [window_type]),
    )):
        rooted("IfcRelAssociatesClassification", f"classification-{number}", RelatingClassification=ref, RelatedObjects=objects)
    for number in range(3):
        rooted("IfcBuildingElementProxy", f"proxy-{number}", Name=f"Proxy {number}")
    ifc.write(str(path))
    return path


# --- one measurement, in a fresh process ----------------------------------------------------------------------------


def measure(kind: str, ifc_path: Path, ids_path: Path) -> dict:
    import ifcopenshell
    from ifctester import ids as ifctester_ids

    from checks_app.engine.ids_engine import IdsSource, check_loaded, load_ids
    from checks_app.engine.zygote import warm_up

    warm_up()  # as the check zygote before it forks a check, for every kind: ifctester's IDS schema, ifcopenshell's rules,
    gc.collect()  # and what is loaded kept out of the collector's way
    gc.freeze()
    Path("/proc/self/clear_refs").write_text("5")  # the peak RSS from here on: the check's, not the schema build's
    started = time.perf_counter()
    ifc = ifcopenshell.open(str(ifc_path))
    opened = time.perf_counter()
    digest = ""
    if kind == "ifctester":
        document = ifctester_ids.open(str(ids_path))
        parsed = time.perf_counter()
        document.validate(ifc)
        verdicts = {spec.name: bool(spec.status) for spec in document.specifications}
    else:
        source = IdsSource(ids_path.name, ids_path.read_text(encoding="utf-8"))
        documents = [(source, load_ids(source.xml))]
        parsed = time.perf_counter()
        result = check_loaded(ifc, documents, indexed=kind != "before")
        verdicts = {spec["name"]: spec["status"] == "pass" for spec in result["specifications"]}
        digest = hashlib.sha256(json.dumps(result, sort_keys=True).encode()).hexdigest()
    done = time.perf_counter()
    return {"seconds": done - parsed, "parse_seconds": parsed - opened, "open_seconds": opened - started, "engine_seconds": done - started,
            "peak_mb": _peak_rss_mb(), "verdicts": verdicts, "digest": digest}


def _peak_rss_mb() -> float:
    """The process's peak resident memory (VmHWM) since clear_refs, in MB: imports and the model included."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def measured(kind: str, ifc_path: Path, ids_path: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--measure", kind, str(ifc_path), str(ids_path)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONHASHSEED": "0"})  # as in the sandbox: ifctester's sets of names in one order
    if done.returncode != 0:
        raise RuntimeError(f"measuring {kind} on {ifc_path.name} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the worker's ways ----------------------------------------------------------------------------------------------


def in_sandbox(ifc_path: Path, ids_path: Path, folder: Path) -> float:
    from checks_app.engine.runner import run_check_process, warm_up
    from models_app.public import ConversionLimits

    limits = ConversionLimits(memory_mb=8192)
    warm_up(limits)  # as check_worker does at startup
    job = {"ids": [{"name": ids_path.name, "content": ids_path.read_text(encoding="utf-8")}], "overrides": None}
    with tempfile.TemporaryDirectory(dir=folder) as work_dir:
        started = time.perf_counter()
        outcome = run_check_process(ifc_path=ifc_path, job=job, work_dir=Path(work_dir), timeout_seconds=1800, limits=limits,
                                    on_progress=lambda phase, percent: None)
        elapsed = time.perf_counter() - started
    assert outcome.ok, outcome.error
    return elapsed


class ApiChecks:
    """A stack (gateway, conversion worker, edit service, check worker) for the run; each file uploaded once."""

    def __init__(self, folder: Path, polling: bool = False):
        from tests.e2e.stack import Stack

        (folder / "stack").mkdir()
        self.stack = Stack(folder / "stack", workers=1)
        self.stack.start()
        self.stack.start_check_worker()
        self.stack.wait_worker_polling("checks0")
        self.models: dict[Path, str] = {}
        self.runs = 0
        self.polling = polling

    def model(self, ifc_path: Path) -> str:
        if ifc_path not in self.models:
            with open(ifc_path, "rb") as handle:
                answer = self.stack.api("POST", "/api/v1/models", files={"file": (ifc_path.name, handle)}).json()
            model_id = answer["data"]["id"]
            model = self.stack.wait_model(model_id, timeout=1800)
            assert model["status"] == "ready", model
            self.models[ifc_path] = model_id
        return self.models[ifc_path]

    def check(self, ifc_path: Path, ids_path: Path, seen: bool = False) -> tuple[float, dict]:
        """Seconds from the POST to the check seen done; the check. Each run's IDS differs in its title only, so no
        earlier check answers it from the cache; seen: the IDS's own bytes each time (the gateway has seen them, as
        when a team runs its IDS again), under a new upload name instead, so again no earlier check answers."""
        from tests.helpers import poll

        model_id = self.model(ifc_path)
        self.runs += 1
        text = ids_path.read_text(encoding="utf-8")
        name = f"run-{self.runs}-{ids_path.name}" if seen else ids_path.name
        if not seen:
            text = text.replace("<title>", f"<title>run {self.runs}: ", 1)
        started = time.perf_counter()
        answer = self.stack.api("POST", f"/api/v1/models/{model_id}/checks", files=[("ids", (name, text.encode()))]).json()
        check_id = answer["data"]["checkId"]
        url = f"/api/v1/models/{model_id}/checks/{check_id}"
        if self.polling:
            check = poll(lambda: self.stack.api("GET", url).json()["data"], lambda found: found["status"] in ("done", "failed"),
                         timeout=1800, interval=POLL_SECONDS)
        else:
            check = answer["data"]
            while check["status"] not in ("done", "failed"):
                check = self.stack.api("GET", f"{url}?waitSeconds={WAIT_SECONDS}").json()["data"]
        elapsed = time.perf_counter() - started
        assert check["status"] == "done", check
        return elapsed, check

    def stop(self) -> None:
        self.stack.stop()


def bench_file(path: Path, ids_path: Path, repeat: int, folder: Path, api: ApiChecks | None, api_seen: bool = False) -> dict:
    runs: dict[str, list[dict]] = {"ifctester": [], "before": [], "after": []}
    sandbox, through_api, through_api_seen = [], [], []
    if api is not None and api_seen:
        api.check(path, ids_path, seen=True)  # the gateway sees the IDS's bytes once, untimed
    for _ in range(repeat):
        for kind in runs:
            runs[kind].append(measured(kind, path, ids_path))
        sandbox.append(in_sandbox(path, ids_path, folder))
        if api is not None:
            time.sleep(IDLE_BEFORE_API_SECONDS)
            through_api.append(api.check(path, ids_path)[0])
            if api_seen:
                time.sleep(IDLE_BEFORE_API_SECONDS)
                through_api_seen.append(api.check(path, ids_path, seen=True)[0])

    def median(kind: str, key: str = "seconds") -> float:
        return statistics.median(run[key] for run in runs[kind])

    after, anchor, engine = median("after"), median("ifctester"), median("after", "engine_seconds")
    digests = {run["digest"] for kind in ("before", "after") for run in runs[kind]}
    ours, theirs = runs["after"][-1]["verdicts"], runs["ifctester"][-1]["verdicts"]
    import ifcopenshell

    figures = {
        "file": path.name, "sizeMB": round(path.stat().st_size / 1e6, 2), "products": len(ifcopenshell.open(str(path)).by_type("IfcProduct")),
        "specifications": len(ours), "repeat": repeat,
        "ifctester_validate_s": round(anchor, 3), "before_s": round(median("before"), 3), "after_s": round(after, 3),
        "ratio": round(after / anchor, 3), "speedup": round(median("before") / after, 2), "same_result": len(digests) == 1,
        "open_s": round(median("after", "open_seconds"), 3), "ids_parse_s": round(median("after", "parse_seconds"), 3), "engine_s": round(engine, 3),
        "sandbox_s": round(statistics.median(sandbox), 3), "sandbox_ratio": round(statistics.median(sandbox) / engine, 2),
        "peak_mb": {kind: round(median(kind, "peak_mb")) for kind in runs},
        "differing_verdicts": sorted(name for name in ours if ours[name] != theirs.get(name)),
    }
    if through_api:
        figures.update({"api_s": round(statistics.median(through_api), 3), "api_ratio": round(statistics.median(through_api) / engine, 2)})
    if through_api_seen:
        figures.update({"api_seen_s": round(statistics.median(through_api_seen), 3),
                        "api_seen_ratio": round(statistics.median(through_api_seen) / engine, 2)})
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--storeys", type=int, default=105)
    parser.add_argument("--bays", type=int, default=30)
    parser.add_argument("--ids", type=Path, default=DEFAULT_IDS)
    parser.add_argument("--no-api", action="store_true", help="skip the check through the API (no stack is started)")
    parser.add_argument("--tower-only", action="store_true", help="the generated tower only, no sample")
    parser.add_argument("--api-seen", action="store_true",
                        help="also api_seen_s: the check through the API with an IDS whose bytes the gateway has seen (a new upload name each run)")
    parser.add_argument("--poll", action="store_true", help="the API figures read the check by polling every 10 ms (as before ?waitSeconds)")
    parser.add_argument("--measure", nargs=3, metavar=("KIND", "IFC", "IDS"), help=argparse.SUPPRESS)
    parser.add_argument("samples", nargs="*", type=Path)
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_SAMPLE} and a 2-storey tower, once")
    args = parser.parse_args()
    if args.measure:
        kind, ifc_path, ids_path = args.measure
        print(json.dumps(measure(kind, Path(ifc_path), Path(ids_path))))
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "viewer_gateway.settings")  # the runner reaches models_app.public
    import django

    django.setup()
    samples = () if args.tower_only else DEFAULT_SAMPLES
    if args.smoke:
        samples, args.repeat, args.storeys, args.bays = (SMOKE_SAMPLE,), 1, 2, 2
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = args.samples or [SAMPLES / name for name in samples if (SAMPLES / name).exists()] + [build_tower(folder, args.storeys, args.bays)]
        api = None if args.no_api else ApiChecks(folder, polling=args.poll)
        try:
            for path in files:
                print(json.dumps(bench_file(path, args.ids, args.repeat, folder, api, args.api_seen)), flush=True)
        finally:
            if api is not None:
                api.stop()


if __name__ == "__main__":
    main()
