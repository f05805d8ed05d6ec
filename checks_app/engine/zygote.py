"""The check zygote: a long-lived process inside the check sandbox (the runner starts it through bubblewrap like a
check's own process) that imports ifcopenshell, ifctester and the engine once and builds ifctester's IDS schema
once, then forks one child per check, so no check pays for starting Python, importing and building the schema
(0.8 s before the first element was looked at; the conversions' zygote, models_app/conversion/zygote.py, is the
model).

    python -m checks_app.engine.zygote --control-fd N

Talks to its worker over a Unix seqpacket socket (fd N). A child is forked ahead of its check (the worker's spare,
runner.py): one message {"fds": ["go", "progress", "stderr"]} with those descriptors attached (SCM_RIGHTS). The
zygote answers {"ready": pid} once warm, {"forked": pid} per child and {"exited": pid, "status": code} when that
child has ended (a negative code is the signal that killed it). The child waits on its `go` socket: first for
{JOINED: n} (the worker has moved it into the check's own cgroup, with its memory and process caps), upon which it
copies the memory it shares with the zygote, when that is at most n bytes, until its job comes
(sandboxing.zygote_server.copy_shared_memory, charged to its own cgroup); then for its job: one message
{"cpu_seconds": n, "memory_bytes": n} with the descriptors of the IFC, the job file and the result file attached
(an end of `go` without a message: it exits 3 without reading anything). It then caps its CPU time (and its address
space when there is no cgroup), and only then reads the IFC; it runs checks_app.engine.child's check with progress on
its stdout and errors on its stderr. The zygote never touches a check's files, starts no thread and is not
dumpable; one child at a time.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import select
import socket
import sys
import types
from typing import NoReturn

from sandboxing.zygote_server import (
    MESSAGE_BYTES,
    NO_GO_EXIT_CODE,
    PR_SET_DUMPABLE,
    PR_SET_PDEATHSIG,
    cap_self,
    copy_shared_memory,
    exit_after,
    prctl,
    send,
    serve,
)

MAX_FDS = 8
FDS = ("go", "progress", "stderr")  # the child's, when it is forked
JOB_FDS = ("ifc", "job", "out")  # handed over with its job on `go`
RESULT_WRITTEN = "resultWritten"  # the child's last progress line when its result is complete
# the first message on `go`, {JOINED: bytes}: the child is in its cgroup, and may copy that much of the memory it
# shares with the zygote ahead of its job
JOINED = "joinedCopyBytes"


def _child(_fork: dict, fds: dict[str, int]) -> NoReturn:
    """A forked child's whole life (sandboxing.zygote_server.run_child's, with the job handed over on `go`): it dies
    with the zygote, writes progress to its stdout and errors to its stderr, waits for its job, caps itself and runs
    the check; whatever it raises goes to stderr (the worker's error tail) with exit code 1. Never returns."""
    import signal

    def life() -> int:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.dup2(fds["stderr"], 2)
        os.dup2(fds["progress"], 1)
        job, handed = _await_job(fds["go"])
        return _check(job, handed)

    exit_after(life)


def _await_job(go_fd: int) -> tuple[dict, dict[str, int]]:
    """Waits on `go` for JOINED (then copies the memory shared with the zygote until the job is there) and for the
    job and its descriptors, then caps the CPU time (job["cpu_seconds"]) and, without a cgroup, the address space
    (job["memory_bytes"])."""
    go = socket.socket(fileno=go_fd)
    message, fds, _, _ = socket.recv_fds(go, MESSAGE_BYTES, len(JOB_FDS))
    if message and not fds and JOINED in (joined := json.loads(message)):
        copy_shared_memory(joined[JOINED], interrupted=lambda: bool(select.select([go], [], [], 0)[0]))  # until the job comes
        message, fds, _, _ = socket.recv_fds(go, MESSAGE_BYTES, len(JOB_FDS))
    if not message:  # the worker gave this child up
        os._exit(NO_GO_EXIT_CODE)
    if len(fds) != len(JOB_FDS):
        raise RuntimeError(f"the job came with {len(fds)} descriptors, not {len(JOB_FDS)}")
    go.close()
    job = json.loads(message)
    cap_self(job)
    return job, dict(zip(JOB_FDS, fds))


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
