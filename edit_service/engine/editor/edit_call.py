"""The Editor's script map: locate an element's call site, and edit-call (rewrite one argument of it, run, stage)."""

from __future__ import annotations

from functools import lru_cache

from edit_service.engine import analysis, products, scripts
from edit_service.engine.editor.base import EditorBase
from edit_service.engine.editor.runs import run_result
from edit_service.engine.errors import Conflict, Invalid
from edit_service.engine.kinds import DXF, IFC, ModelKind
from edit_service.engine.products import (
    build_product,
    counts_since,
    publish_product,
    run_folder,
)
from edit_service.engine.store import read_json
from edit_service.sandbox.script_lib import guid_for


@lru_cache(maxsize=32)
def _keys_by_guid(script_hash: str, keys: tuple[str, ...]) -> dict[str, str]:
    return {guid_for(key): key for key in keys}


def design_key_for(guid: str, envelope: dict, kind: ModelKind = IFC) -> str | None:
    """The designKey whose GlobalId is `guid` (the reverse index is built once per script map); in a drawing the key
    is the id itself."""
    if kind is DXF:
        return guid if guid in envelope.get("map", {}) else None
    return _keys_by_guid(envelope.get("scriptHash") or "", tuple(envelope.get("map", {}))).get(guid)


class EditCall(EditorBase):
    """Locate and edit-call on the current script map."""

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
                with self.staging_restored_on_failure():
                    self._push(new_script, note=f"{design_key}.{argument} = {value!r}", kind="edit-call")
                    publish_product(self.files, product)
        counts = counts_since(previous, product.snapshot)
        return {**run_result(product, counts), "designKey": design_key, "argument": argument, "value": value, "staging": self._staging().summary()}
