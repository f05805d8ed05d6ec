"""The Editor's staging steps: the current script and its state, stage (script or PARAMS), undo, redo, discard."""

from __future__ import annotations

from edit_service.engine import analysis, scripts
from edit_service.engine.editor.base import EditorBase
from edit_service.engine.errors import Invalid
from edit_service.engine.staging import Staging
from edit_service.engine.store import place_file, read_json


class StagingSteps(EditorBase):
    """The staged script: reading it, stage, undo, redo, discard."""

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

    def staging_diff(self, start: int | None, end: int | None) -> dict:
        self.files.require()
        staging = self._staging()
        start, end = staging.pair(start, end)
        old, new = staging.states[start]["script"], staging.states[end]["script"]
        return {"from": start, "to": end, **analysis.script_diff(old, new, f"step {start}", f"step {end}")}

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
