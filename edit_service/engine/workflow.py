"""Use cases of the edit service for one model: staging, sandbox runs, versions, rollback, diffs.

Every write holds the model's lock. The working product (model.ifc + current.map.json + current.snapshot.json) only
changes after a successful sandbox run and validation, so script and product never diverge; a failed run changes
nothing.
"""

from __future__ import annotations

import shutil
import uuid
from contextlib import contextmanager
from functools import lru_cache
from dataclasses import dataclass
from pathlib import Path

from edit_service.engine import history, scripts, semantic_diff
from edit_service.engine.call_rewrite import rewrite_call_argument
from edit_service.engine.errors import Conflict, Invalid, NotFound, RunFailed
from edit_service.engine.sandbox import Sandbox
from edit_service.engine.script_map import build_map
from edit_service.engine.staging import Staging
from edit_service.engine.store import ModelFiles, place_file, read_json, write_json_atomic
from edit_service.engine.versions import Versions
from edit_service.sandbox.script_lib import guid_for


@lru_cache(maxsize=32)
def _keys_by_guid(script_hash: str, keys: tuple[str, ...]) -> dict[str, str]:
    return {guid_for(key): key for key in keys}


def design_key_for(guid: str, envelope: dict) -> str | None:
    """The designKey whose GlobalId is `guid` (the reverse index is built once per script map)."""
    return _keys_by_guid(envelope.get("scriptHash") or "", tuple(envelope.get("map", {}))).get(guid)


@dataclass
class Product:
    """A successful sandbox run: the generated IFC (inside its run folder), its snapshot and script map."""

    script: str
    script_hash: str
    ifc: Path
    snapshot: dict
    script_map: dict
    seconds: float


class Editor:
    def __init__(self, data_dir: Path, sandbox: Sandbox, model_id: str):
        self.files = ModelFiles(data_dir, model_id)
        self.sandbox = sandbox
        self.versions = Versions(self.files)

    # --- reads -------------------------------------------------------------------------------------------------

    def _staging(self) -> Staging:
        return Staging.load(self.files.staging)

    def current_script(self) -> tuple[str | None, str | None]:
        """(script, source): the staged state, else the latest version's script, else (None, None)."""
        staging = self._staging()
        if staging.active:
            return staging.current["script"], "staging"
        latest = self.versions.latest()
        if latest:
            return self.versions.script(latest), "version"
        return None, None

    def script_state(self) -> dict:
        self.files.require()
        script, source = self.current_script()
        digest = scripts.script_hash(script) if script is not None else None
        working = read_json(self.files.working, {})
        return {
            "script": script,
            "scriptHash": digest,
            "source": source,
            "version": self.versions.latest(),
            "staging": self._staging().summary(),
            "ran": digest is not None and working.get("scriptHash") == digest,
        }

    def params(self) -> dict:
        self.files.require()
        script, _ = self.current_script()
        if script is None:
            raise Invalid("the model has no build script yet")
        return scripts.read_params(script)

    def version_list(self) -> dict:
        self.files.require()
        return {
            "versions": [{"version": m["version"], "createdAt": m["createdAt"]} for m in self.versions.listing()],
            "current": self.versions.latest(),
        }

    def script_list(self) -> list[dict]:
        self.files.require()
        result = []
        for meta in self.versions.listing():
            script = self.versions.script(meta["version"])
            result.append({**meta, "lines": len(script.splitlines()), "params": scripts.read_params(script)})
        return result

    def script_diff(self, base: str, target: str) -> dict:
        self.files.require()
        diff = scripts.script_diff(self.versions.script(base), self.versions.script(target), base, target)
        return {"base": base, "target": target, **diff}

    def staging_diff(self, start: int | None, end: int | None) -> dict:
        self.files.require()
        staging = self._staging()
        start, end = staging.pair(start, end)
        old, new = staging.states[start]["script"], staging.states[end]["script"]
        return {"from": start, "to": end, **scripts.script_diff(old, new, f"step {start}", f"step {end}")}

    # --- staging -----------------------------------------------------------------------------------------------

    def stage(self, *, script: str | None = None, params: dict | None = None, note: str = "") -> dict:
        self.files.require()
        if (script is None) == (params is None):
            raise Invalid("give exactly one of script and params")
        with self.files.lock():
            current, _ = self.current_script()
            if params is not None:
                if current is None:
                    raise Invalid("the model has no build script whose PARAMS could be rewritten; stage a script first")
                new_script, kind = scripts.rewrite_params(current, params), "params"
            else:
                new_script, kind = script, "edit"
            scripts.check_contract(new_script)
            self._push(new_script, note=note, kind=kind)
        return self.script_state()

    def _push(self, script: str, *, note: str, kind: str) -> Staging:
        staging = self._staging()
        latest = self.versions.latest()
        if not staging.active and latest is None and self.files.ifc.is_file() and not self.files.bootstrap_ifc.exists():
            # a model uploaded as IFC is taken over by a script: keep the original
            place_file(self.files.ifc, self.files.bootstrap_ifc, keep_source=True)
        staging.push(
            script, note=note, kind=kind,
            base_script=self.versions.script(latest) if latest and not staging.active else None,
            base_note=f"saved {latest}" if latest else "",
        )
        staging.save(self.files.staging)
        return staging

    def undo(self) -> dict:
        return self._move("undo")

    def redo(self) -> dict:
        return self._move("redo")

    def _move(self, direction: str) -> dict:
        self.files.require()
        with self.files.lock():
            staging = self._staging()
            staging.undo() if direction == "undo" else staging.redo()
            staging.save(self.files.staging)
        return self.script_state()

    def discard(self) -> dict:
        """Drops staging and brings the working product back to the last saved version (or the original upload)."""
        self.files.require()
        with self.files.lock():
            discarded = self._staging().active
            self.files.staging.unlink(missing_ok=True)
            latest = self.versions.latest()
            if latest:
                self._restore_version_product(latest)
            elif self.files.bootstrap_ifc.exists():
                place_file(self.files.bootstrap_ifc, self.files.ifc, keep_source=True)
                for path in (self.files.current_map, self.files.current_snapshot, self.files.working):
                    path.unlink(missing_ok=True)
        return {"discarded": discarded, "current": latest}

    # --- runs, saves, rollback ---------------------------------------------------------------------------------

    @contextmanager
    def _run_folder(self):
        folder = self.files.runs_dir / uuid.uuid4().hex[:12]
        folder.mkdir(parents=True)
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _build(self, script: str, folder: Path) -> Product:
        params = scripts.check_contract(script)
        ifc, recorded, seconds = self.sandbox.build(script, params, folder)
        snapshot = self.sandbox.inspect(folder, ifc.name)
        return Product(script, scripts.script_hash(script), ifc, snapshot, build_map(script, recorded), seconds)

    def _publish_working(self, product: Product) -> None:
        place_file(product.ifc, self.files.ifc, keep_source=False)  # the run folder is removed right after
        write_json_atomic(self.files.current_map, product.script_map)
        write_json_atomic(self.files.current_snapshot, product.snapshot)
        write_json_atomic(self.files.working, {"scriptHash": product.script_hash})

    def _restore_version_product(self, version: str) -> None:
        place_file(self.version_ifc(version), self.files.ifc, keep_source=True)
        write_json_atomic(self.files.current_map, read_json(self.files.version_file(version, ".map.json"), {}))
        write_json_atomic(self.files.current_snapshot, self.versions.snapshot(version))
        write_json_atomic(self.files.working, {"scriptHash": self.versions.meta(version)["scriptHash"]})

    def version_ifc(self, version: str) -> Path:
        """A version's IFC: materialised (latest), cached, or rebuilt from its script and cached."""
        self.files.require()
        return self.versions.ifc_path(version) or self._rebuild_version_ifc(version)

    def _rebuild_version_ifc(self, version: str) -> Path:
        with self._run_folder() as folder:
            product = self._build(self.versions.script(version), folder)
            return self.versions.cache_ifc(version, product.ifc)

    def _staged_script(self) -> str:
        staging = self._staging()
        if not staging.active:
            raise Invalid("nothing is staged: stage a script (PUT script) first")
        return staging.current["script"]

    def _run_and_publish(self, script: str) -> tuple[Product, dict | None]:
        previous = read_json(self.files.current_snapshot)
        with self._run_folder() as folder:
            product = self._build(script, folder)
            self._publish_working(product)
        counts = semantic_diff.counts(semantic_diff.diff_snapshots(previous, product.snapshot)) if previous is not None else None
        return product, counts

    @staticmethod
    def _run_result(product: Product, counts: dict | None) -> dict:
        return {
            "ok": True,
            "scriptHash": product.script_hash,
            "elements": len(product.snapshot),
            "seconds": round(product.seconds, 3),
            "semanticDiff": counts,
        }

    def run(self) -> dict:
        self.files.require()
        with self.files.lock():
            product, counts = self._run_and_publish(self._staged_script())
        return self._run_result(product, counts)

    def save(self, *, note: str = "", author: str = "local-user", provenance: str = "UI", operation: str = "update") -> dict:
        self.files.require()
        with self.files.lock():
            self.versions.remove_incomplete()
            script = self._staged_script()
            digest = scripts.script_hash(script)
            working = read_json(self.files.working, {})
            if working.get("scriptHash") == digest and self.files.current_snapshot.exists():
                snapshot = read_json(self.files.current_snapshot)
                script_map = read_json(self.files.current_map, {})
                ifc = self.files.ifc
            else:
                product, _ = self._run_and_publish(script)
                snapshot, script_map, ifc = product.snapshot, product.script_map, self.files.ifc
            previous = self.versions.latest()
            diff = semantic_diff.diff_snapshots(self.versions.snapshot(previous), snapshot) if previous else None
            meta = self.versions.create(script=script, script_hash=digest, ifc=ifc, snapshot=snapshot, script_map=script_map, note=note)
            self.files.staging.unlink(missing_ok=True)
            if diff:
                history.append_history(self.files, [
                    {"guid": item["guid"], "changes": [{"field": c["field"], "oldValue": c["old"], "newValue": c["new"]} for c in item["changes"]],
                     "author": author, "provenance": {"source": provenance}, "operation": operation, "version": meta["version"]}
                    for item in diff["changed"]
                ])
            alignment = self._alignment(snapshot)
        result = {**meta, "semanticDiff": semantic_diff.counts(diff) if diff else None, "diff": diff}
        if alignment is not None:
            result["alignment"] = alignment
        return result

    def _alignment(self, snapshot: dict) -> dict | None:
        """How far the generated result still is from the uploaded original (counts); None without an original.
        A failure here never fails the save."""
        if not self.files.bootstrap_ifc.exists():
            return None
        try:
            original = read_json(self.files.bootstrap_snapshot)
            if original is None:
                with self._run_folder() as folder:
                    shutil.copyfile(self.files.bootstrap_ifc, folder / "bootstrap.ifc")
                    original = self.sandbox.inspect(folder, "bootstrap.ifc", validate=False)
                write_json_atomic(self.files.bootstrap_snapshot, original)
            return semantic_diff.counts(semantic_diff.diff_snapshots(original, snapshot))
        except (RunFailed, OSError, ValueError) as exc:
            return {"error": str(exc)[:500]}

    def rollback(self, version: str) -> dict:
        self.files.require()
        with self.files.lock():
            script = self.versions.script(version)
            before = self.files.staging.read_bytes() if self.files.staging.exists() else None
            self._push(script, note=f"rollback to {version}", kind="rollback")
            try:
                product, counts = self._run_and_publish(script)
            except BaseException:
                if before is None:
                    self.files.staging.unlink(missing_ok=True)
                else:
                    self.files.staging.write_bytes(before)
                raise
        return {**self._run_result(product, counts), "rolledBackTo": version}

    # --- script map: locate and edit-call ----------------------------------------------------------------------

    def _map_and_script(self) -> tuple[dict, str | None]:
        envelope = read_json(self.files.current_map) or {"scriptHash": None, "map": {}}
        script, _ = self.current_script()
        return envelope, script

    def locate(self, guid: str) -> dict:
        """The create_entity call site of an element; found false when unknown; stale when the staged script is not
        the one that produced the map."""
        self.files.require()
        envelope, script = self._map_and_script()
        stale = script is None or envelope.get("scriptHash") != scripts.script_hash(script)
        key = design_key_for(guid, envelope)
        if key is None:
            return {"found": False, "guid": guid, "stale": stale}
        return {"found": True, "guid": guid, "designKey": key, **envelope["map"][key], "stale": stale, "scriptHash": envelope["scriptHash"]}

    def edit_call(self, design_key: str, argument: str, value) -> dict:
        """Locate, rewrite one scalar argument, contract check + sandbox run, push one staging step. Any failure:
        no side effect (409 when staging and map diverged, 422 otherwise)."""
        self.files.require()
        with self.files.lock():
            envelope, script = self._map_and_script()
            if script is None or envelope.get("scriptHash") != scripts.script_hash(script):
                raise Conflict("the staged script is not the one the script map was made from (unrun staging, undo, or an old map): run the staged script first")
            site = envelope["map"].get(design_key)
            if site is None:
                raise Invalid(f"design key {design_key!r} is not in the script map")
            if site["origin"] == "traced":
                raise Invalid(f"{design_key!r} comes from a traced call site (computed key, loop or helper) at line {site['line']}; edit the script instead")
            new_script = rewrite_call_argument(script, site["line"], site["col"], argument, value)
            previous = read_json(self.files.current_snapshot)
            with self._run_folder() as folder:
                product = self._build(new_script, folder)
                if design_key not in product.script_map["map"]:
                    raise Invalid(f"after the rewrite the script no longer creates {design_key!r}")
                self._push(new_script, note=f"{design_key}.{argument} = {value!r}", kind="edit-call")
                self._publish_working(product)
        counts = semantic_diff.counts(semantic_diff.diff_snapshots(previous, product.snapshot)) if previous is not None else None
        return {**self._run_result(product, counts), "designKey": design_key, "argument": argument, "value": value, "staging": self._staging().summary()}

    # --- semantic diffs ----------------------------------------------------------------------------------------

    def _snapshot_of(self, name: str) -> dict:
        if name == "current":
            snapshot = read_json(self.files.current_snapshot)
            if snapshot is None:
                raise NotFound("the model has no script-generated working product yet (run a script first)")
            return snapshot
        return self.versions.snapshot(name)

    def semantic_diff(self, base: str, target: str) -> dict:
        self.files.require()
        if base == "current":
            raise Invalid("base must be a version (v1, v2, ...); only target may be current")
        cache = self.files.cache_dir / f"diff-{base}-{target}.json"
        if target != "current":
            self.versions.meta(base), self.versions.meta(target)
            cached = read_json(cache)
            if cached is not None:
                return cached
        result = {"base": base, "target": target, **semantic_diff.diff_snapshots(self._snapshot_of(base), self._snapshot_of(target))}
        if target != "current":
            write_json_atomic(cache, result)  # versions are immutable
        return result

    def upload_diff(self, upload: Path) -> dict:
        """Diff of an uploaded IFC against the current product; nothing is stored or cached."""
        self.files.require()
        current = self._snapshot_of("current") if self.files.current_snapshot.exists() else None
        with self._run_folder() as folder:
            shutil.copyfile(upload, folder / "upload.ifc")
            try:
                uploaded = self.sandbox.inspect(folder, "upload.ifc", validate=False)
            except RunFailed as exc:
                raise Invalid(f"the file could not be read as IFC: {exc.detail}") from None
        if current is None:
            current = self._uploaded_model_snapshot()
        diff = semantic_diff.diff_snapshots(current, uploaded)
        return {"base": "current", "target": "upload", **diff, "labels": semantic_diff.labels(current, uploaded)}

    def _uploaded_model_snapshot(self) -> dict:
        """Snapshot of model.ifc for a model that has no script product yet (an uploaded IFC)."""
        if not self.files.ifc.is_file():
            raise NotFound("the model has no IFC to compare with")
        with self._run_folder() as folder:
            shutil.copyfile(self.files.ifc, folder / "model.ifc")
            return self.sandbox.inspect(folder, "model.ifc", validate=False)
