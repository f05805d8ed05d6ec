"""One clash run's geometry work, in its own confined process (coordination_app.services.confined; a memory blow-up
in the engine, or a hostile IFC, takes only this process down, under a memory cap like a conversion's):

    python -m coordination_app.run_child --job /proc/self/fd/N --out /proc/self/fd/M [--memory-mb N]

job: {"kind", "tolerance", "distance", "a": [side], "b": [side] | null, "geometry": {model id: "/proc/self/fd/K"},
"mesh": {model id: {"ifc": "/proc/self/fd/K", "out": "/proc/self/fd/L"}}} with side = {"modelId", "matrix": [16
numbers, row-major 4x4], "guids": [GlobalIds] | null, "select"?: {"classes", "exclude"}}. The models under "mesh"
(the agent's staged product, a model converted before clash geometry existed) have no clash geometry yet: their IFC
is meshed here first, with the conversion's own meshing (models_app.conversion.clash_meshing), into "out" (a file the
parent made for it), so no IFC of a run is parsed outside this sandbox; their elements' facts (class, name, storey)
come from that IFC too, and a side's "select" picks their elements by class there (a staged product may have
elements no conversion has seen). --out gets JSON {"clashes": [{aModel, aGuid, bModel, bGuid, point, depth,
distance}], "facts": {meshed model id: {GlobalId: {type, name, storey}}}}. Progress goes to stdout as JSON lines {"phase": "meshing" | "clashing", "percent"}, at least every
HEARTBEAT_SECONDS (the parent stops the process between two lines when the run is cancelled); errors go to stderr.
Nothing of Django is imported."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path

from sandboxing.capped_main import capped_main

MEMORY_EXIT_CODE = 3
# the exit code of a run that ended because nobody reads its progress any more: the worker that started it died (as
# the edit service's sandboxed runs, edit_service/sandbox/outputs.py)
READER_GONE = 99
HEARTBEAT_SECONDS = 0.2


class Heartbeat:
    """Prints the latest progress every HEARTBEAT_SECONDS from a thread, so the parent hears from the process even
    while the engine is deep in one pair."""

    def __init__(self, phase: str):
        self.phase = phase
        self.percent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self) -> None:
        """Ends the process when a beat finds the progress pipe without a reader: bubblewrap binds a sandbox to its
        starter only once it is set up (containers/bubblewrap#633), so a worker killed in that moment left the run
        going, and a broken pipe raised in this thread would have ended the thread, not the run."""
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                report(self.phase, self.percent)
            except BrokenPipeError:
                os._exit(READER_GONE)

    def __enter__(self) -> "Heartbeat":
        report(self.phase, self.percent)  # at once: the parent hears from the process before any heavy import
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def report(phase: str, percent: float) -> None:
    print(json.dumps({"phase": phase, "percent": int(percent)}), flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--job", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    return capped_main(parser, argv, run, "the clash run", MEMORY_EXIT_CODE)


def _sets(sides: list[dict] | None, geometry: dict[str, str]):
    import numpy as np

    from coordination_app.engine.clashes import ElementSet

    if sides is None:
        return None
    return [ElementSet(model_id=side["modelId"], geometry_path=Path(geometry[side["modelId"]]), matrix=np.array(side["matrix"], dtype=float).reshape(4, 4),
                       guids=None if side["guids"] is None else frozenset(side["guids"])) for side in sides]


def ifc_facts(ifc) -> dict[str, dict]:
    """{GlobalId: {type, name, storey}} of the IFC's objects, as engine.elements reads them from a conversion's
    metadata.json (the parent of an object: what aggregates it, else the spatial element that contains it)."""
    from coordination_app.engine import elements

    parents = {}
    for relation, whole, parts in (("IfcRelAggregates", "RelatingObject", "RelatedObjects"),
                                   ("IfcRelContainedInSpatialStructure", "RelatingStructure", "RelatedElements")):
        for rel in ifc.by_type(relation):
            for part in getattr(rel, parts) or ():
                parents.setdefault(part.GlobalId, getattr(rel, whole).GlobalId)
    objects = [{"id": item.GlobalId, "name": item.Name or "", "type": item.is_a(), "parent": parents.get(item.GlobalId)}
               for item in ifc.by_type("IfcObjectDefinition")]
    return elements.facts({"metaObjects": objects})


def _select(sides: list[dict] | None, model_id: str, facts: dict[str, dict], schema: str) -> None:
    """The elements of the meshed model that each side's class filter picks (engine.selection, as the parent picks
    a converted model's from its metadata)."""
    from coordination_app.engine import selection

    for side in sides or ():
        if side["modelId"] == model_id and (chosen := selection.picked(facts, schema, side.get("select"))) is not None:
            side["guids"] = sorted(chosen)


def mesh(job: dict, heartbeat: Heartbeat) -> tuple[dict[str, str], dict[str, dict]]:
    """Meshes each IFC of job["mesh"] into its "out" file, takes its elements' facts and applies the sides' class
    filters to it; answers (model id -> the clash geometry to read, model id -> facts)."""
    import gc
    import importlib

    import ifcopenshell

    from coordination_app.engine.geometry import WRITER_MODULE

    # by name, as engine.geometry names the meshing program it runs: this sandboxed process runs the conversion's own
    # meshing (models_app's package is bound read-only into it); the gateway's apps never import it
    write_clash_geometry = importlib.import_module(WRITER_MODULE).write_clash_geometry

    meshed, facts, count = {}, {}, len(job["mesh"])
    for index, (model_id, files) in enumerate(sorted(job["mesh"].items())):
        ifc = ifcopenshell.open(files["ifc"])
        write_clash_geometry(ifc, files["out"], 1, lambda fraction, index=index: setattr(heartbeat, "percent", 100 * (index + fraction) / count))
        facts[model_id] = ifc_facts(ifc)
        for side in ("a", "b"):
            _select(job[side], model_id, facts[model_id], ifc.schema)
        del ifc
        gc.collect()  # one model's IFC at a time: the clashing that follows has the memory
        meshed[model_id] = files["out"]
    return meshed, facts


def run(args) -> int:
    job = json.loads(args.job.read_text(encoding="utf-8"))
    facts = {}
    with Heartbeat("meshing" if job.get("mesh") else "clashing") as heartbeat:  # from the start: cancel is heard throughout
        if job.get("mesh"):
            meshed, facts = mesh(job, heartbeat)
            job["geometry"] = {**job["geometry"], **meshed}
            heartbeat.phase, heartbeat.percent = "clashing", 0
        from coordination_app.engine.clashes import find_clashes

        found = find_clashes(_sets(job["a"], job["geometry"]), _sets(job["b"], job["geometry"]), kind=job["kind"], tolerance=job["tolerance"],
                             distance=job["distance"], on_progress=lambda fraction: setattr(heartbeat, "percent", 100 * fraction))
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump({"clashes": [{"aModel": fact.a_model, "aGuid": fact.a_guid, "bModel": fact.b_model, "bGuid": fact.b_guid, "point": list(fact.point),
                                "depth": fact.depth, "distance": fact.distance} for fact in found], "facts": facts}, handle, separators=(",", ":"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
