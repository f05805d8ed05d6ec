"""The conversion zygote: a long-lived process inside the conversion sandbox (see sandbox.py) that imports
ifcopenshell and the pipeline once, then forks one child per conversion, so no conversion pays for starting Python
and importing ifcopenshell.

    python -m models_app.conversion.zygote --control-fd N

Talks to its worker over a Unix seqpacket socket (fd N). A job is one message {"threads": n, "fds": [names]} with
the descriptors of those names attached (SCM_RIGHTS): go, ifc, metadata, values, geometry, bounds, clash, georeference,
progress, stderr. The
zygote answers {"ready": pid} once warm, {"forked": pid} per job and {"exited": pid, "status": code} when that
child has ended (a negative code is the signal that killed it). The child waits on `go` until the worker has moved
it into the conversion's own cgroup (memory and process caps), and only then reads the IFC. The zygote itself never
touches a job's files, never starts a thread (fork keeps only the forking thread) and is not dumpable, so a child
cannot ptrace it or read its memory; it handles one job at a time.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import io
import os
import re
import socket
import sys

from sandboxing.zygote_server import PR_SET_DUMPABLE, prctl, run_child, send, serve

MAX_FDS = 16
# optional parts of ifcopenshell no conversion uses (it opens every IFC as a STEP file), which ifcopenshell leaves out
# when these cannot be imported: lark, for which it builds a parser at import (the header's MVD as file.mvd, and
# ifcopenshell.stream), and sqlite3 (ifcopenshell.sql): 4.4 MB less in the zygote
LEFT_OUT = ("lark", "sqlite3")
LEFT_OUT_NOTE = re.compile(r"No \w+ support: import of \w+ halted; None in sys.modules")


def _release_free_heap() -> None:
    """Gives the pages glibc's malloc kept after the imports back to the system (~0.5 MB the zygote would otherwise
    hold while it waits); a no-op without glibc."""
    malloc_trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if malloc_trim is not None:
        malloc_trim(0)


def _child(job: dict, fds: dict[str, int]) -> None:
    """Runs one conversion and exits; never returns."""
    run_child(job, fds, "stderr", lambda: _convert(job, fds))


def _convert(job: dict, fds: dict[str, int]) -> int:
    try:
        from models_app.conversion.pipeline import convert

        convert(ifc_fd=fds["ifc"], metadata_fd=fds["metadata"], values_fd=fds["values"], geometry_fd=fds["geometry"],
                bounds_fd=fds["bounds"], progress_fd=fds["progress"], threads=int(job["threads"]),
                clash_fd=fds.get("clash"), georeference_fd=fds.get("georeference"))
    except MemoryError:
        print("the conversion ran out of memory", file=sys.stderr)
        return 1
    return 0


def _import_conversion_code() -> None:
    """Everything a conversion imports, once."""
    with _unimportable(LEFT_OUT):
        import numpy  # noqa: F401
        import ifcopenshell  # noqa: F401
        import ifcopenshell.geom  # noqa: F401
        import ifcopenshell.util.classification  # noqa: F401
        import ifcopenshell.util.element  # noqa: F401

        from models_app.conversion import clash_geometry, element_values, geometry, metadata, pipeline  # noqa: F401


@contextlib.contextmanager
def _unimportable(names: tuple[str, ...]):
    """Within: `names` cannot be imported, and ifcopenshell's notes that it goes without them ("No SQL support: ...")
    are dropped (in the zygote's stderr tail they would read like errors); anything else printed passes. After:
    they can be imported again, but what checked for them at import stays without them in every conversion
    (ifcopenshell's MVD reading of the header, ifcopenshell.stream, ifcopenshell.sql: none used by a conversion,
    which test_conversion_memory.py checks)."""
    hidden = [name for name in names if name not in sys.modules]
    sys.modules.update(dict.fromkeys(hidden))
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            yield
    finally:
        for name in hidden:
            del sys.modules[name]
        for line in printed.getvalue().splitlines(keepends=True):
            if not LEFT_OUT_NOTE.match(line):
                sys.stderr.write(line)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[sys.argv.index("--control-fd") + 1]))
    _import_conversion_code()
    # schema definitions are left to load in the child that needs one (0.02 s; they would sit in the zygote's
    # memory during every node stage); what is loaded stays out of the collector's way, so children do not copy it
    gc.collect()
    gc.freeze()
    _release_free_heap()
    prctl(PR_SET_DUMPABLE, 0)
    send(control, {"ready": os.getpid()})
    serve(control, _child, MAX_FDS)


if __name__ == "__main__":
    main()
