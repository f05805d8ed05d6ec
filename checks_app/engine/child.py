"""One IDS check, in its sandbox: forked from the check worker's warm zygote (checks_app/engine/zygote.py, which the
runner uses), or as a process of its own (a crash or memory blow-up in a native library takes only it down):

    python -m checks_app.engine.child --ifc /proc/self/fd/N --job /proc/self/fd/M --out /proc/self/fd/K [--memory-mb N]

job: {"ids": [{"name": ..., "content": IDS XML}], "overrides": {GlobalId: {field: value}} | null}. The process caps
its own address space when asked (no cgroup), opens the IFC with ifcopenshell on a second thread while it reads the
IDS files (ifcopenshell parses without Python's lock: 10-20 ms of a small model's check), applies the overrides to
the in-memory model when given, checks every specification and writes the result JSON to --out. Progress goes to
stdout as JSON lines {"phase", "percent"}; errors go to stderr. Nothing of Django is imported.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path

from sandboxing.capped_main import capped_main

MEMORY_EXIT_CODE = 3
# the IDS cannot be run, the same way every time: a pattern RE2 cannot run (stored before patterns were checked at
# upload), or a document ifctester cannot read (the upload's libxml2 validation lets through what the XSD allows)
UNRUNNABLE_IDS_EXIT_CODE = 4


def report(phase: str, percent: float) -> None:
    print(json.dumps({"phase": phase, "percent": int(percent)}), flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ifc", type=Path, required=True)
    parser.add_argument("--job", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    return capped_main(parser, argv, lambda args: check_files(args.ifc, args.job, args.out), "the check", MEMORY_EXIT_CODE)


class IdsUnreadable(Exception):
    """ifctester cannot read an IDS document (valid against the XSD: the upload's validation let it through)."""


def _read_ids(source):
    """The IDS document as the engine reads it (ids_engine.load_ids); IdsUnreadable when ifctester cannot."""
    from checks_app.engine.ids_engine import load_ids
    from checks_app.engine.xsd_patterns import PatternUnsupported

    try:
        return load_ids(source.xml)
    except PatternUnsupported:
        raise
    except Exception as exc:  # noqa: BLE001 - said as the upload's validation says it
        raise IdsUnreadable(f"the IDS file {source.name} cannot be read: {type(exc).__name__}: {exc}") from None


class _Opening:
    """ifcopenshell.open(path) on a thread of its own; result() waits for the file, or the Exception it raised (a
    MemoryError, or anything that is no Exception, is raised again: the check's memory exit, or a crash). The order
    of the file's instance identities (the hashes that order ifctester's sets) stays as without the thread only
    because reading the IDS creates no ifcopenshell instance meanwhile."""

    def __init__(self, path: Path):
        self._outcome: object = None
        self._thread: threading.Thread | None = threading.Thread(target=self._open, args=(path,), name="ifc-open")
        try:
            self._thread.start()
        except RuntimeError:  # no thread to be had (the cgroup's task cap): opened here, before the IDS is read
            self._thread = None
            self._open(path)

    def _open(self, path: Path) -> None:
        import ifcopenshell

        try:
            self._outcome = ifcopenshell.open(str(path))
        except BaseException as exc:  # noqa: BLE001 - handed to the check's thread, which says it or raises it
            self._outcome = exc

    def result(self):
        if self._thread is not None:
            self._thread.join()
        outcome = self._outcome
        if isinstance(outcome, BaseException) and (isinstance(outcome, MemoryError) or not isinstance(outcome, Exception)):
            raise outcome  # the check's memory exit, or a crash
        return outcome  # the file, or why ifcopenshell cannot read it


def _unrunnable(exc: Exception) -> int:
    """Says why the IDS cannot be run (a pattern RE2 cannot run, a document ifctester cannot read); its exit code."""
    sys.stderr.write(f"{exc}\n" if isinstance(exc, IdsUnreadable) else f"the IDS cannot be checked: {exc}\n")
    return UNRUNNABLE_IDS_EXIT_CODE


def check_files(ifc_path: Path, job_path: Path, out_path: Path) -> int:
    """Checks the IFC at ifc_path as the job at job_path says, writes the result to out_path; the exit code."""
    from checks_app.engine.ids_engine import IdsSource, check_loaded
    from checks_app.engine.overrides import apply_overrides
    from checks_app.engine.xsd_patterns import PatternUnsupported

    job = json.loads(job_path.read_text(encoding="utf-8"))
    sources = [IdsSource(item["name"], item["content"]) for item in job["ids"]]
    report("reading", 10)
    opening = _Opening(ifc_path)  # ifcopenshell parses without the GIL: the IDS files are read meanwhile
    try:
        documents = [(source, _read_ids(source)) for source in sources]
    except (PatternUnsupported, IdsUnreadable) as exc:
        documents = exc
    ifc = opening.result()
    if isinstance(ifc, Exception):  # ifcopenshell raises several types for unsupported schemas and parse errors
        sys.stderr.write(f"ifcopenshell cannot read the IFC: {type(ifc).__name__}: {ifc}\n")
        return 2
    if isinstance(documents, Exception):
        return _unrunnable(documents)
    overrides = None
    if job.get("overrides") is not None:
        report("overrides", 15)
        overrides = {"included": True, **apply_overrides(ifc, job["overrides"])}
    report("checking", 20)
    try:
        result = check_loaded(ifc, documents, on_progress=lambda done, total: report("checking", 20 + 75 * done / max(total, 1)))
    except PatternUnsupported as exc:
        return _unrunnable(exc)
    result["overrides"] = overrides or {"included": False}
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))  # dump() would encode in Python: ~5x slower
    with open(out_path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
