"""IFC -> metadata.json + geometry.glb: the ifcopenshell stage of the conversion, run as a child process.

    python -m models_app.conversion.pipeline --ifc model.ifc --out WORKDIR

Writes WORKDIR/metadata.json, WORKDIR/element-values.json (the IFC values of the override fields) and
WORKDIR/geometry.glb (GLB node names = IFC GlobalIds), or, when ifcopenshell
cannot open the file (e.g. schema IFC4X3_RC2), WORKDIR/fallback.txt with the reason, so the worker converts with
xeokit-convert's own IFC parser instead. The XKT step (node converter/dist/convert.mjs) runs after this process has
exited, so the two never hold memory at the same time. Progress goes to stdout as JSON lines
{"phase": ..., "percent": ...}; errors go to stderr. Kept free of Django: a crash or memory blow-up in a native
library only takes this process down.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
# The fast simple CGAL kernel, with OpenCascade for the elements it fails on (typically walls with openings).
HYBRID_KERNELS = ("cgal-simple", "opencascade")
METADATA_FILE = "metadata.json"
ELEMENT_VALUES_FILE = "element-values.json"
GLB_FILE = "geometry.glb"
FALLBACK_FILE = "fallback.txt"


def die_with_parent() -> None:
    """Linux: deliver SIGKILL to this process when its parent dies (a killed worker leaves nothing running)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def report(phase: str, percent: float) -> None:
    sys.stdout.write(json.dumps({"phase": phase, "percent": int(percent)}) + "\n")
    sys.stdout.flush()


def write_json(path: Path, payload: dict) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, ensure_ascii=False, separators=(",", ":"))


def write_glb(ifc, glb_path: Path, threads: int) -> int:
    import ifcopenshell.geom

    settings = ifcopenshell.geom.settings()
    settings.set("use-world-coords", True)
    settings.set("use-element-guids", True)  # GLB node name = IFC GlobalId = XKT entity id
    settings.set("apply-default-materials", True)
    serializer = ifcopenshell.geom.serializers.gltf(str(glb_path), settings)
    serializer.setFile(ifc)
    serializer.setUnitNameAndMagnitude("METER", 1.0)
    serializer.writeHeader()
    hybrid_available = all(ifcopenshell.geom.has_geometry_library(kernel) for kernel in HYBRID_KERNELS)
    library = "hybrid-" + "-".join(HYBRID_KERNELS) if hybrid_available else "opencascade"
    iterator = ifcopenshell.geom.iterator(
        settings, ifc, threads, exclude=ifc.by_type("IfcOpeningElement"), geometry_library=library
    )
    count = 0
    last_report = 0.0
    if iterator.initialize():
        while True:
            serializer.write(iterator.get())
            count += 1
            now = time.monotonic()
            if now - last_report > 0.5:
                report("geometry", 15 + iterator.progress() * 0.7)
                last_report = now
            if not iterator.next():
                break
    serializer.finalize()
    return count


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ifc", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    die_with_parent()

    import ifcopenshell

    from models_app.conversion.element_values import element_values
    from models_app.conversion.metadata import build_metadata

    report("reading", 1)
    try:
        ifc = ifcopenshell.open(str(args.ifc))
    except Exception as exc:  # ifcopenshell raises several types for unsupported schemas and parse errors
        (args.out / FALLBACK_FILE).write_text(f"{type(exc).__name__}: {exc}")
        return 0
    report("metadata", 5)
    write_json(args.out / METADATA_FILE, build_metadata(ifc))
    write_json(args.out / ELEMENT_VALUES_FILE, element_values(ifc))
    report("geometry", 15)
    shapes = write_glb(ifc, args.out / GLB_FILE, args.threads)
    if not shapes:
        (args.out / GLB_FILE).unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
