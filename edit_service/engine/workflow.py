"""Use cases of the edit service for one model: staging, sandbox runs, versions, rollback, diffs, locate and
edit-call.

Every write holds the model's lock (bounded wait). Each use case has one commit point: the working product
(model.ifc + current.map.json + current.snapshot.json, see products.py) and the staging change only after a
successful sandbox run and validation, so script and product never diverge, and a failed or cancelled run
changes nothing.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

from core.host_paths import host_prefixes, neutral_paths
from edit_service.engine import analysis, history, products, scripts, semantic_diff
from edit_service.engine.errors import Conflict, Invalid, NotFound, RunFailed
from edit_service.engine.kinds import DXF, IFC, ModelKind, project_of
from edit_service.engine.products import Product, build_product, counts_since, publish_product, run_folder
from edit_service.engine.sandbox import Sandbox, cancel_runs
from edit_service.engine.staging import Staging
from edit_service.engine.store import MODEL_ID_RE, VERSION_RE, ModelFiles, place_file, read_json, write_atomic, write_json_atomic
from edit_service.engine.versions import Versions
from edit_service.sandbox.script_lib import guid_for

logger = logging.getLogger(__name__)


@lru_cache(maxsize=32)
def _keys_by_guid(script_hash: str, keys: tuple[str, ...]) -> dict[str, str]:
    return {guid_for(key): key for key in keys}


def design_key_for(guid: str, envelope: dict, kind: ModelKind = IFC) -> str | None:
    """The designKey whose GlobalId is `guid` (the reverse index is built once per script map); in a drawing the key
    is the id itself."""
    if kind is DXF:
        return guid if guid in envelope.get("map", {}) else None
    return _keys_by_guid(envelope.get("scriptHash") or "", tuple(envelope.get("map", {}))).get(guid)


def _run_result(product: Product, counts: dict | None) -> dict:
    return {"ok": True, "scriptHash": product.script_hash, "elements": len(product.snapshot), "seconds": round(product.seconds, 3), "semanticDiff": counts}


class Editor:
    def __init__(self, data_dir: Path, sandbox: Sandbox, model_id: str, lock_timeout: float = 30):
        self.data_dir = Path(data_dir)
        self.files = ModelFiles(data_dir, model_id, lock_timeout=lock_timeout)
        # runs share the sandbox's slots fairly by requester: the model's, unless the caller named one
        self.sandbox = sandbox if sandbox.requester else sandbox.for_requester(model_id)
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
        return analysis.read_params(script)

    def version_list(self) -> dict:
        self.files.require()
        return {
            "versions": [{"version": m["version"], "createdAt": m["createdAt"], "author": m.get("author", "")} for m in self.versions.listing()],
            "current": self.versions.latest(),
        }

    def script_list(self) -> list[dict]:
        self.files.require()
        result = []
        for meta in self.versions.listing():
            script = self.versions.script(meta["version"])
            result.append({**{k: v for k, v in meta.items() if k != "requestId"}, "lines": len(script.splitlines()), "params": analysis.read_params(script)})
        return result

    def script_diff(self, base: str, target: str) -> dict:
        self.files.require()
        diff = analysis.script_diff(self.versions.script(base), self.versions.script(target), base, target)
        return {"base": base, "target": target, **diff}

    def staging_diff(self, start: int | None, end: int | None) -> dict:
        self.files.require()
        staging = self._staging()
        start, end = staging.pair(start, end)
        old, new = staging.states[start]["script"], staging.states[end]["script"]
        return {"from": start, "to": end, **analysis.script_diff(old, new, f"step {start}", f"step {end}")}

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
                new_script, kind = analysis.rewrite_params(current, params), "params"
            else:
                new_script, kind = script, "edit"
            analysis.check_contract(new_script)
            self._push(new_script, note=note, kind=kind)
        return self.script_state()

    def _push(self, script: str, *, note: str, kind: str) -> None:
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
            latest = self.versions.latest()
            if latest:
                self._restore_version_product(latest)
            elif self.files.bootstrap_ifc.exists():
                place_file(self.files.bootstrap_ifc, self.files.ifc, keep_source=True)
                for path in (self.files.current_map, self.files.current_snapshot, self.files.working):
                    path.unlink(missing_ok=True)
            self.files.staging.unlink(missing_ok=True)
        return {"discarded": discarded, "current": latest}

    # --- runs, saves, rollback ---------------------------------------------------------------------------------

    def _restore_version_product(self, version: str) -> None:
        for name in self.files.kind.extra_outputs:
            kept = self.files.version_file(version, f".{name}")
            if kept.is_file():
                place_file(kept, self.files.root / name, keep_source=True)
        place_file(self.version_ifc(version), self.files.ifc, keep_source=True)
        write_json_atomic(self.files.current_map, read_json(self.files.version_file(version, ".map.json"), {}))
        write_json_atomic(self.files.current_snapshot, self.versions.snapshot(version))
        write_json_atomic(self.files.working, {"scriptHash": self.versions.meta(version)["scriptHash"]})

    def version_ifc(self, version: str) -> Path:
        """A version's IFC: materialised (latest), cached, or rebuilt from its script and cached."""
        self.files.require()
        cached = self.versions.ifc_path(version)
        if cached is not None:
            return cached
        with run_folder(self.files) as folder:
            product = build_product(self.sandbox, self.versions.script(version), folder, self.files.kind, self.script_inputs)
            return self.versions.cache_ifc(version, product.ifc)

    def script_inputs(self, params: dict) -> dict[str, Path]:
        """A cad->ifc script reads a pinned version of a drawing: PARAMS "source": {"model": id, "version": "v<n>"}
        binds that version's DXF (materialised, cached or rebuilt) as source.dxf; the script opens it with
        script_lib.dxf_input("source"). Pinning keeps "same script and params, same IFC"."""
        source = params.get("source")
        if not isinstance(source, dict) or "model" not in source:
            return {}
        model_id, version = source.get("model"), source.get("version")
        if not isinstance(model_id, str) or not MODEL_ID_RE.match(model_id) or not isinstance(version, str) or not VERSION_RE.match(version):
            raise Invalid('PARAMS "source" must be {"model": "m_<16 hex>", "version": "v<n>"}')
        drawing = Editor(self.data_dir, self.sandbox, model_id)
        if not drawing.files.exists() or drawing.files.kind is not DXF:
            raise Invalid(f"source model {model_id} is not a DXF drawing of this service")
        if project_of(self.files.root) is None or project_of(drawing.files.root) != project_of(self.files.root):
            raise Invalid(f"source drawing {model_id} is not a drawing of this model's project")
        try:
            return {"source.dxf": drawing.version_ifc(version)}
        except NotFound:
            raise Invalid(f"source drawing {model_id} has no version {version}") from None

    def _staged_script(self) -> str:
        staging = self._staging()
        if not staging.active:
            raise Invalid("nothing is staged: stage a script (PUT script) first")
        return staging.current["script"]

    def _build_and_publish(self, script: str) -> tuple[Product, dict | None]:
        previous = products.current_snapshot(self.files)
        with run_folder(self.files) as folder:
            product = build_product(self.sandbox, script, folder, self.files.kind, self.script_inputs)
            publish_product(self.files, product)
        return product, counts_since(previous, product.snapshot)

    def run(self) -> dict:
        self.files.require()
        with self.files.lock():
            product, counts = self._build_and_publish(self._staged_script())
        return _run_result(product, counts)

    def save(self, *, note: str = "", author: str = "local-user", provenance: str = "UI", operation: str = "update", request_id: str | None = None) -> dict:
        """A new big version of the staged script (run first when it has not run). A save repeating a requestId
        that is already saved answers that version again and creates nothing."""
        self.files.require()
        with self.files.lock():
            self.versions.remove_incomplete()
            if request_id:
                saved = self.versions.by_request_id(request_id)
                if saved is not None:
                    return {**self._save_result(saved), "replayed": True}
            script = self._staged_script()
            digest = scripts.script_hash(script)
            if read_json(self.files.working, {}).get("scriptHash") == digest and self.files.current_snapshot.exists():
                snapshot, script_map = read_json(self.files.current_snapshot), read_json(self.files.current_map, {})
            else:
                product, _ = self._build_and_publish(script)
                snapshot, script_map = product.snapshot, product.script_map
            previous = self.versions.latest()
            diff = semantic_diff.diff_snapshots(self.versions.snapshot(previous), snapshot) if previous else None
            meta = self.versions.create(script=script, script_hash=digest, ifc=self.files.ifc, snapshot=snapshot, script_map=script_map,
                                        note=note, request_id=request_id, author=author)
            # committed: what follows must not fail the save
            self.files.staging.unlink(missing_ok=True)
            self._record_history(diff, meta["version"], author, provenance, operation)
            alignment = self._alignment(snapshot)
        result = {**meta, "semanticDiff": semantic_diff.counts(diff) if diff else None, "diff": diff}
        result.pop("requestId", None)
        if alignment is not None:
            result["alignment"] = alignment
        return result

    def _save_result(self, meta: dict) -> dict:
        number = int(meta["version"][1:])
        previous = self.versions.previous(number)
        diff = semantic_diff.diff_snapshots(self.versions.snapshot(previous), self.versions.snapshot(meta["version"])) if previous else None
        return {**{k: v for k, v in meta.items() if k != "requestId"}, "semanticDiff": semantic_diff.counts(diff) if diff else None, "diff": diff}

    def _record_history(self, diff: dict | None, version: str, author: str, provenance: str, operation: str) -> None:
        if not diff:
            return
        try:
            history.append_history(self.files, [
                {"guid": item["guid"], "changes": [{"field": c["field"], "oldValue": c["old"], "newValue": c["new"]} for c in item["changes"]],
                 "author": author, "provenance": {"source": provenance}, "operation": operation, "version": version}
                for item in diff["changed"]
            ])
        except Exception:  # noqa: BLE001 - the version is saved; its history entries are bookkeeping
            logger.exception("history of %s %s not written", self.files.model_id, version)

    def _alignment(self, snapshot: dict) -> dict | None:
        """How far the generated result still is from the uploaded original (counts); None without an original.
        Any failure here is reported in the result, never as a failure of the save."""
        if not self.files.bootstrap_ifc.exists():
            return None
        try:
            original = read_json(self.files.bootstrap_snapshot)
            if original is None:
                with run_folder(self.files) as folder:
                    original = self.sandbox.inspect(folder, self.files.bootstrap_ifc, validate=False)
                write_json_atomic(self.files.bootstrap_snapshot, original)
            return semantic_diff.counts(semantic_diff.diff_snapshots(original, snapshot))
        except Exception as exc:  # noqa: BLE001 - see the docstring
            return {"error": neutral_paths(str(exc), host_prefixes(self.data_dir))[:500]}

    def rollback(self, version: str) -> dict:
        """That version's script becomes the newest staging step and is built into the working product."""
        self.files.require()
        with self.files.lock():
            script = self.versions.script(version)
            before = self.files.staging.read_bytes() if self.files.staging.exists() else None
            self._push(script, note=f"rollback to {version}", kind="rollback")
            try:
                product, counts = self._build_and_publish(script)
            except BaseException:
                if before is None:
                    self.files.staging.unlink(missing_ok=True)
                else:
                    write_atomic(self.files.staging, before)
                raise
        return {**_run_result(product, counts), "rolledBackTo": version}

    def cancel_runs(self) -> dict:
        """Kills every sandbox run of this model (any edit-service process); each one fails as cancelled."""
        self.files.require()
        return {"cancelled": cancel_runs(self.files.runs_dir)}

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
        key = design_key_for(guid, envelope, self.files.kind)
        if key is None:
            return {"found": False, "guid": guid, "stale": stale}
        return {"found": True, "guid": guid, "designKey": key, **envelope["map"][key], "stale": stale, "scriptHash": envelope["scriptHash"]}

    def edit_call(self, design_key: str, argument: str, value) -> dict:
        """Locate, rewrite one scalar argument, contract check + sandbox run, then (the commit point) publish the
        product and push one staging step. Any failure: no side effect (409 when staging and map diverged, 422
        otherwise)."""
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
            new_script = analysis.rewrite_call_argument(script, site["line"], site["col"], argument, value)
            previous = products.current_snapshot(self.files)
            with run_folder(self.files) as folder:
                product = build_product(self.sandbox, new_script, folder, self.files.kind, self.script_inputs)
                if design_key not in product.script_map["map"]:
                    raise Invalid(f"after the rewrite the script no longer creates {design_key!r}")
                staging_before = self.files.staging.read_bytes() if self.files.staging.exists() else None
                self._push(new_script, note=f"{design_key}.{argument} = {value!r}", kind="edit-call")
                try:
                    publish_product(self.files, product)
                except BaseException:
                    if staging_before is None:
                        self.files.staging.unlink(missing_ok=True)
                    else:
                        write_atomic(self.files.staging, staging_before)
                    raise
        counts = counts_since(previous, product.snapshot)
        return {**_run_result(product, counts), "designKey": design_key, "argument": argument, "value": value, "staging": self._staging().summary()}

    # --- semantic diffs ----------------------------------------------------------------------------------------

    def _snapshot_of(self, name: str) -> dict:
        if name == "current":
            snapshot = products.current_snapshot(self.files)
            if snapshot is None:
                raise NotFound("the model has no script-generated working product yet (run a script first)")
            return snapshot
        return self.versions.snapshot(name)

    def semantic_diff(self, base: str, target: str) -> dict:
        self.files.require()
        if base == "current":
            raise Invalid("base must be a version (v1, v2, ...); only target may be current")
        if target != "current":
            self.versions.meta(base), self.versions.meta(target)
            cache = self.files.cache_dir / f"diff-{base}-{target}.json"
            cached = read_json(cache)
            if cached is not None:
                return cached
        result = {"base": base, "target": target, **semantic_diff.diff_snapshots(self._snapshot_of(base), self._snapshot_of(target))}
        if target != "current":
            self.files.cache_dir.mkdir(exist_ok=True)
            write_json_atomic(cache, result)  # versions are immutable
        return result

    def upload_diff(self, upload: Path) -> dict:
        """Diff of an uploaded IFC against the current product; nothing is stored or cached."""
        self.files.require()
        current = self._snapshot_of("current") if self.files.current_snapshot.exists() else None
        with run_folder(self.files) as folder:
            try:
                uploaded = self.sandbox.inspect(folder, upload, validate=False, kind=self.files.kind)
            except RunFailed as exc:
                raise Invalid(f"the file could not be read as {self.files.kind.what}: {exc.detail}") from None
            if current is None:
                if not self.files.ifc.is_file():
                    raise NotFound("the model has no IFC to compare with")
                current = self.sandbox.inspect(folder, self.files.ifc, validate=False, kind=self.files.kind)
        diff = semantic_diff.diff_snapshots(current, uploaded)
        return {"base": "current", "target": "upload", **diff, "labels": semantic_diff.labels(current, uploaded)}
