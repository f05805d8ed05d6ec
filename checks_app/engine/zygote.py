"""The check zygote: a long-lived process inside the check sandbox (the runner starts it through bubblewrap like a
check's own process) that imports ifcopenshell, ifctester and the engine once and builds ifctester's IDS schema
once, then forks one child per check, so no check pays for starting Python, importing and building the schema
(0.8 s before the first element was looked at; the conversions' zygote, models_app/conversion/zygote.py, is the
model).

    python -m checks_app.engine.zygote --control-fd N

Talks to its worker over a Unix seqpacket socket (fd N). A check is one message {"fds": [names], "memory_bytes": n,
"cpu_seconds": n} with the descriptors of those names attached (SCM_RIGHTS): go, ifc, job, out, progress, stderr.
The zygote answers {"ready": pid} once warm, {"forked": pid} per check and {"exited": pid, "status": code} when that
child has ended (a negative code is the signal that killed it). The child waits on `go` until the worker has moved
it into the check's own cgroup (memory and process caps), caps its CPU time (and its address space when there is no
cgroup), and only then reads the IFC; it runs checks_app.engine.child's check with progress on its stdout and errors
on its stderr. The zygote never touches a check's files, starts no thread and is not dumpable; one check at a time.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import socket
import sys
import types

from sandboxing.zygote_server import PR_SET_DUMPABLE, prctl, run_child, send, serve

MAX_FDS = 8
FDS = ("go", "ifc", "job", "out", "progress", "stderr")
RESULT_WRITTEN = "resultWritten"  # the child's last progress line when its result is complete


def _child(job: dict, fds: dict[str, int]) -> None:
    """Runs one check and exits; never returns."""
    run_child(job, fds, "progress", lambda: _check(job, fds))


def _check(job: dict, fds: dict[str, int]) -> int:
    from pathlib import Path

    from checks_app.engine.child import MEMORY_EXIT_CODE, check_files

    try:
        code = check_files(*(Path(f"/proc/self/fd/{fds[name]}") for name in ("ifc", "job", "out")))
    except MemoryError:
        sys.stderr.write(f"the check ran out of memory (limit {job.get('memory_bytes', 0) // (1024 * 1024)} MB)\n")
        return MEMORY_EXIT_CODE
    if code == 0:  # the last line: the worker takes the result while this process's memory is torn down (10-40 ms)
        print(json.dumps({RESULT_WRITTEN: True}), flush=True)
    return code


def warm_up() -> None:
    """Everything a check imports, ifctester's IDS schema (XMLSchema of ids.xsd: ~1 s to build), what the IDS index
    keeps per process (the classes of common attributes: ~3 ms each) and what ifcopenshell loads on first use, once."""
    import ifcopenshell
    import ifcopenshell.api.classification  # noqa: F401
    import ifcopenshell.api.pset  # noqa: F401
    from ifctester import ids as ifctester_ids

    from checks_app.engine import child, ids_engine, ids_index, overrides, xsd_patterns  # noqa: F401

    ifctester_ids.get_schema()
    ids_index.warm_up()
    # ifcopenshell imports a schema's rules module (30-70 ms) on the first read of an attribute an entity does not
    # have (getattr(x, "Name", None) on an IFC2X3 material layer, in ifctester and ifcopenshell.util): most checks do
    for schema in ("IFC2X3", "IFC4", "IFC4X3_ADD2"):
        importlib.import_module(f"ifcopenshell.express.rules.{schema}")
    # file.schema compiles its pattern on first use (~8 ms); asked of a stand-in, as a new file would take instance
    # identities (the hashes of ifctester's sets of elements: the order of its IFC2X3 results) from the model's
    ifcopenshell.file.schema.fget(types.SimpleNamespace(schema_identifier="IFC4"))


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[sys.argv.index("--control-fd") + 1]))
    warm_up()
    gc.collect()
    gc.freeze()  # what is loaded stays out of the collector's way, so children do not copy it
    prctl(PR_SET_DUMPABLE, 0)
    send(control, {"ready": os.getpid()})
    serve(control, _child, MAX_FDS)


if __name__ == "__main__":
    main()
