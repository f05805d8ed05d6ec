"""IFC -> metadata.json + model.xkt, run as a child process of the conversion worker.

    python -m models_app.conversion.pipeline --ifc model.ifc --out WORKDIR --node node --converter convert.js

Writes WORKDIR/metadata.json and WORKDIR/model.xkt. Progress goes to stdout as JSON lines
{"phase": ..., "percent": ...}; errors go to stderr (the worker keeps the last 2 KB). Kept free of Django so a crash
or memory blow-up in a native library only takes this process down.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Linux: deliver SIGKILL to this process when its parent dies (a killed worker leaves nothing running)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def report(phase: str, percent: int) -> None:
    sys.stdout.write(json.dumps({"phase": phase, "percent": int(percent)}) + "\n")
    sys.stdout.flush()


def run_node(args: argparse.Namespace, *node_args: str) -> None:
    result = subprocess.run(
        [args.node, str(args.converter), *node_args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=die_with_parent,
        check=False,
    )
    if result.returncode != 0:
        sys.stderr.write(result.stderr.decode("utf-8", "replace")[-4000:])
        raise SystemExit(f"xeokit-convert exited with code {result.returncode}")


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
    iterator = ifcopenshell.geom.iterator(settings, ifc, threads, exclude=ifc.by_type("IfcOpeningElement"))
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


def convert_with_ifcopenshell(ifc, args: argparse.Namespace) -> None:
    from models_app.conversion.metadata import build_metadata

    report("metadata", 5)
    metadata_path = args.out / "metadata.json"
    write_json(metadata_path, build_metadata(ifc))
    report("geometry", 15)
    glb_path = args.out / "geometry.glb"
    shapes = write_glb(ifc, glb_path, args.threads)
    report("xkt", 88)
    if shapes:
        run_node(args, "--source", str(glb_path), "--metadata", str(metadata_path), "--output", str(args.out / "model.xkt"))
    else:
        run_node(args, "--empty", "--metadata", str(metadata_path), "--output", str(args.out / "model.xkt"))
    glb_path.unlink(missing_ok=True)


def convert_with_xeokit_ifc_parser(args: argparse.Namespace, reason: str) -> None:
    """Fallback for schemas ifcopenshell cannot open (e.g. IFC4X3_RC2): xeokit-convert's web-ifc parser."""
    from models_app.conversion.metadata import normalise_fallback_metadata

    sys.stderr.write(f"ifcopenshell could not open the file ({reason}); using xeokit-convert's IFC parser\n")
    report("fallback", 10)
    raw_metadata = args.out / "fallback-metadata.json"
    run_node(args, "--source", str(args.ifc), "--output", str(args.out / "model.xkt"), "--metadata-out", str(raw_metadata))
    metadata = normalise_fallback_metadata(json.loads(raw_metadata.read_text(encoding="utf-8")))
    write_json(args.out / "metadata.json", metadata)
    raw_metadata.unlink()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ifc", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--node", default="node")
    parser.add_argument("--converter", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    die_with_parent()

    import ifcopenshell

    report("reading", 1)
    try:
        ifc = ifcopenshell.open(str(args.ifc))
    except Exception as exc:  # ifcopenshell raises several types for unsupported schemas and parse errors
        convert_with_xeokit_ifc_parser(args, f"{type(exc).__name__}: {exc}")
    else:
        convert_with_ifcopenshell(ifc, args)
    report("done", 100)
    return 0


if __name__ == "__main__":
    sys.exit(main())
