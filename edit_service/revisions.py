"""Semantic diffs of an uploaded model's revisions: the IFC files the gateway keeps as revisions/v<n>.ifc in the
model's folder (POST /models/{id}/revisions on the gateway; an extension of the spec, docs/api/revisions.md). Each
file is snapshotted in the sandbox as diff/upload snapshots an uploaded file, then diffed by the engine's semantic
diff. Revisions never change once written, so their snapshots and diffs are cached (script/cache/), under the
fingerprint of the code that made them: a changed snapshot or diff (more facts recorded) makes them anew."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from edit_service.engine import semantic_diff
from edit_service.engine.errors import Invalid, NotFound, RunFailed
from edit_service.engine.kinds import IFC
from edit_service.engine.products import run_folder
from edit_service.engine.store import VERSION_RE, read_json, write_json_atomic
from edit_service.engine.workflow import Editor

REVISIONS_DIR = "revisions"
ENGINE_FILES = [Path(__file__).parent / "sandbox" / "inspect_ifc.py", Path(__file__).parent / "sandbox" / "snapshot.py", Path(semantic_diff.__file__)]


@lru_cache(maxsize=1)
def _engine_fingerprint() -> str:
    digest = hashlib.sha256()
    for path in ENGINE_FILES:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _revision_ifc(editor: Editor, version: str) -> Path:
    path = editor.files.root / REVISIONS_DIR / f"{version}.ifc"
    if not VERSION_RE.match(version or "") or not path.is_file():
        raise NotFound(f"model {editor.files.model_id} has no uploaded revision {version}")
    return path


def _snapshot(editor: Editor, version: str) -> dict:
    cache = editor.files.cache_dir / f"revision-{version}.{_engine_fingerprint()}.snapshot.json"
    cached = read_json(cache)
    if cached is not None:
        return cached
    with run_folder(editor.files) as folder:
        try:
            snapshot = editor.sandbox.inspect(folder, _revision_ifc(editor, version), validate=False, kind=IFC)
        except RunFailed as exc:
            raise Invalid(f"revision {version} could not be read as an IFC: {exc.detail}") from None
    editor.files.cache_dir.mkdir(exist_ok=True)
    write_json_atomic(cache, snapshot)
    return snapshot


def revision_diff(editor: Editor, base: str, target: str) -> dict:
    """The diff response of two revisions, with labels (GlobalId -> readable name) as the upload diff has."""
    editor.files.require()
    if editor.files.kind is not IFC:
        raise NotFound(f"model {editor.files.model_id} is a {editor.files.kind.what}: it has no uploaded revisions")
    _revision_ifc(editor, base), _revision_ifc(editor, target)
    cache = editor.files.cache_dir / f"revision-diff-{base}-{target}.{_engine_fingerprint()}.json"
    cached = read_json(cache)
    if cached is not None:
        return cached
    old, new = _snapshot(editor, base), _snapshot(editor, target)
    result = {"base": base, "target": target, **semantic_diff.diff_snapshots(old, new), "labels": semantic_diff.labels(old, new)}
    write_json_atomic(cache, result)
    return result
