"""One clash run's geometry work, in its own confined process (coordination_app.services.confined; a memory blow-up
in the engine takes only this process down, under a memory cap like a conversion's):

    python -m coordination_app.run_child --job /proc/self/fd/N --out /proc/self/fd/M [--memory-mb N]

job: {"kind", "tolerance", "distance", "a": [side], "b": [side] | null, "geometry": {model id: "/proc/self/fd/K"}}
with side = {"modelId", "matrix": [16 numbers, row-major 4x4], "guids": [GlobalIds] | null}. The clashes go to --out
as JSON [{aModel, aGuid, bModel, bGuid, point, depth, distance}]. Progress goes to stdout as JSON lines {"phase",
"percent"}, at least every HEARTBEAT_SECONDS (the parent stops the process between two lines when the run is
cancelled); errors go to stderr. Nothing of Django is imported."""

from __future__ import annotations

import argparse
import json
import resource
import sys
import threading
from pathlib import Path

MEMORY_EXIT_CODE = 3
HEARTBEAT_SECONDS = 0.2


class Heartbeat:
    """Prints the latest progress every HEARTBEAT_SECONDS from a thread, so the parent hears from the process even
    while the engine is deep in one pair."""

    def __init__(self):
        self.percent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            report("clashing", self.percent)

    def __enter__(self) -> "Heartbeat":
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
    parser.add_argument("--memory-mb", type=int, default=0)
    args = parser.parse_args(argv)
    if args.memory_mb > 0:
        limit = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        return run(args)
    except MemoryError:
        sys.stderr.write(f"the clash run ran out of memory (limit {args.memory_mb} MB)\n")
        return MEMORY_EXIT_CODE


def _sets(sides: list[dict] | None, geometry: dict[str, str]):
    import numpy as np

    from coordination_app.engine.clashes import ElementSet

    if sides is None:
        return None
    return [ElementSet(model_id=side["modelId"], geometry_path=Path(geometry[side["modelId"]]), matrix=np.array(side["matrix"], dtype=float).reshape(4, 4),
                       guids=None if side["guids"] is None else frozenset(side["guids"])) for side in sides]


def run(args) -> int:
    from coordination_app.engine.clashes import find_clashes

    job = json.loads(args.job.read_text(encoding="utf-8"))
    report("clashing", 0)
    with Heartbeat() as heartbeat:
        found = find_clashes(_sets(job["a"], job["geometry"]), _sets(job["b"], job["geometry"]), kind=job["kind"], tolerance=job["tolerance"],
                             distance=job["distance"], on_progress=lambda fraction: setattr(heartbeat, "percent", 100 * fraction))
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump([{"aModel": fact.a_model, "aGuid": fact.a_guid, "bModel": fact.b_model, "bGuid": fact.b_guid, "point": list(fact.point),
                    "depth": fact.depth, "distance": fact.distance} for fact in found], handle, separators=(",", ":"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
