"""The Editor's diffs and version listings: versions, scripts and their text diffs, staging steps' diff, semantic
diffs of versions, the working product or an uploaded file."""

from __future__ import annotations

import logging
from pathlib import Path

from edit_service.engine import analysis, products, semantic_diff
from edit_service.engine.editor.base import EditorBase
from edit_service.engine.errors import EngineError, Invalid, NotFound, RunFailed
from edit_service.engine.kinds import IFC
from edit_service.engine.products import run_folder
from edit_service.engine.store import read_json, write_json_atomic

logger = logging.getLogger(__name__)


class DiffsAndVersions(EditorBase):
    """Version and script listings, text diffs and semantic diffs."""

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

    def _snapshot_of(self, name: str) -> dict:
        if name == "current":
            snapshot = products.current_snapshot(self.files)
            if snapshot is None:
                raise NotFound("the model has no script-generated working product yet (run a script first)")
            return snapshot
        return self._version_snapshot(name)[0]

    def _version_snapshot(self, version: str) -> tuple[dict, bool]:
        """A version's snapshot with geometry, and whether its geometry is known. A version saved before snapshots
        recorded geometry gets it from its IFC (materialised, cached or rebuilt from its script), cached beside,
        and the diffs cached with it are dropped (they were computed without geometry); when that fails the
        geometry stays unknown (compared as unchanged) and the failure is logged."""
        snapshot = self.versions.snapshot(version)
        if self.files.kind is not IFC or semantic_diff.has_geometry(snapshot):
            return snapshot, True
        cache = self.files.cache_dir / f"{version}.snapshot.json"
        completed = read_json(cache)
        if completed is not None:
            return completed, True
        try:
            ifc = self.version_ifc(version)
            with run_folder(self.files) as folder:
                inspected = self.sandbox.inspect(folder, ifc, validate=False, kind=self.files.kind)
        except EngineError:
            logger.exception("geometry of %s could not be recorded; its geometry stays unknown in diffs", version)
            return snapshot, False
        completed = {guid: {**element, **({"geometry": inspected[guid]["geometry"]} if "geometry" in inspected.get(guid, {}) else {})}
                     for guid, element in snapshot.items()}
        self.files.cache_dir.mkdir(exist_ok=True)
        for stale in [*self.files.cache_dir.glob(f"diff-{version}-*.json"), *self.files.cache_dir.glob(f"diff-*-{version}.json")]:
            stale.unlink(missing_ok=True)
        write_json_atomic(cache, completed)
        return completed, True

    def semantic_diff(self, base: str, target: str) -> dict:
        self.files.require()
        if base == "current":
            raise Invalid("base must be a version (v1, v2, ...); only target may be current")
        self.versions.meta(base)
        if target == "current":
            return {"base": base, "target": target, **semantic_diff.diff_snapshots(self._snapshot_of(base), self._snapshot_of(target))}
        self.versions.meta(target)
        (old, old_known), (new, new_known) = self._version_snapshot(base), self._version_snapshot(target)
        cache = self.files.cache_dir / f"diff-{base}-{target}.json"
        cached = read_json(cache) if old_known and new_known else None
        if cached is not None:
            return cached
        result = {"base": base, "target": target, **semantic_diff.diff_snapshots(old, new)}
        if old_known and new_known:  # versions are immutable; a diff with unknown geometry is computed again
            self.files.cache_dir.mkdir(exist_ok=True)
            write_json_atomic(cache, result)
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
