"""The Editor's runs, saves and rollback: the staged script built in the sandbox and published as the working
product, a save as a new version (idempotent per requestId), a rollback to a version's script."""

from __future__ import annotations

import logging
from pathlib import Path

from core.host_paths import host_prefixes, neutral_paths
from edit_service.engine import history, products, scripts, semantic_diff
from edit_service.engine.editor.base import EditorBase
from edit_service.engine.errors import Invalid, NotFound
from edit_service.engine.kinds import DXF, project_of
from edit_service.engine.products import (
    Product,
    build_product,
    counts_since,
    publish_product,
    run_folder,
)
from edit_service.engine.sandbox import cancel_runs
from edit_service.engine.store import (
    MODEL_ID_RE,
    VERSION_RE,
    place_file,
    read_json,
    write_json_atomic,
)

logger = logging.getLogger(__name__)


def run_result(product: Product, counts: dict | None) -> dict:
    return {"ok": True, "scriptHash": product.script_hash, "elements": len(product.snapshot), "seconds": round(product.seconds, 3), "semanticDiff": counts}


class RunsAndSaves(EditorBase):
    """Runs, saves, rollback and cancelling runs of the model."""

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
        drawing = type(self)(self.data_dir, self.sandbox, model_id)
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
        return run_result(product, counts)

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
            with self.staging_restored_on_failure():
                self._push(script, note=f"rollback to {version}", kind="rollback")
                product, counts = self._build_and_publish(script)
        return {**run_result(product, counts), "rolledBackTo": version}

    def cancel_runs(self) -> dict:
        """Kills every sandbox run of this model (any edit-service process); each one fails as cancelled."""
        self.files.require()
        return {"cancelled": cancel_runs(self.files.runs_dir)}
