"""Meshing an IFC into clash-geometry.bin alone, without a conversion (the agent's staged product, a model converted
before clash geometry existed): the clash run's confined child calls write_clash_geometry; tests and the benchmark
run this module in a child process (coordination_app.engine.geometry.build_clash_geometry):

    python -m models_app.conversion.clash_meshing IFC OUT [--threads N] [--memory-mb M]
"""

from __future__ import annotations


def write_clash_geometry(ifc, out_path: str, threads: int = 1, on_progress=lambda fraction: None) -> int:
    """clash-geometry.bin of an opened IFC into out_path: the conversion's meshing (geometry.write_geometry) without
    its other outputs; returns how many elements it holds. The clash run's confined child calls this too
    (coordination_app.run_child), on an IFC whose elements it reads afterwards."""
    from models_app.conversion.geometry import write_geometry

    with open(out_path, "wb", buffering=1 << 20) as handle:
        return write_geometry(ifc, None, threads, on_progress, clash_handle=handle)


def mesh_ifc(ifc_path: str, out_path: str, threads: int = 1, on_progress=lambda fraction: None) -> int:
    """write_clash_geometry of the IFC at ifc_path, written beside out_path and moved into place when complete."""
    import os
    import tempfile

    import ifcopenshell

    ifc = ifcopenshell.open(ifc_path)
    fd, temp = tempfile.mkstemp(prefix=".clash-geometry.", suffix=".tmp", dir=os.path.dirname(os.path.abspath(out_path)))
    os.close(fd)
    try:
        count = write_clash_geometry(ifc, temp, threads, on_progress)
        os.replace(temp, out_path)
    except BaseException:
        os.unlink(temp)
        raise
    return count


def main(argv=None) -> int:
    """mesh_ifc, with progress as JSON lines {"progress": fraction} and a last line {"elements": n} on stdout; the
    process's address space capped at --memory-mb (0: no cap; sandboxing.capped_main, exit code 1 when it runs out)."""
    import argparse
    import json
    import sys

    from sandboxing.capped_main import capped_main

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("ifc")
    parser.add_argument("out")
    parser.add_argument("--threads", type=int, default=1)

    def progress(fraction: float) -> None:
        print(json.dumps({"progress": round(fraction, 4)}), flush=True)

    def run(args) -> int:
        count = mesh_ifc(args.ifc, args.out, args.threads, progress)
        print(json.dumps({"elements": count}), flush=True)
        sys.stdout.flush()
        return 0

    return capped_main(parser, argv, run, "the meshing", 1)


if __name__ == "__main__":
    raise SystemExit(main())
