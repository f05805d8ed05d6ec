"""Working products: a script built in the sandbox into an IFC with its snapshot and script map, and the one path by
which a product becomes the model's current model.ifc.

A run folder lives under the model's script/runs/; the sandbox writes nothing there itself: the IFC, map and snapshot
in it are files the host created from what the sandbox sent (sandbox.py), so publishing them moves no foreign
inode, symlink or hard link into the model folder."""

from __future__ import annotations

import logging
import shutil
import stat
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from core.files import place_file
from edit_service.engine import analysis, scripts, semantic_diff
from edit_service.engine.errors import RunFailed
from edit_service.engine.kinds import IFC, ModelKind
from edit_service.engine.sandbox import Sandbox
from edit_service.engine.store import ModelFiles, read_json, write_json_atomic

logger = logging.getLogger(__name__)


@dataclass
class Product:
    """A successful sandbox run: the generated IFC (inside its run folder), its snapshot and script map."""

    script: str
    script_hash: str
    ifc: Path
    snapshot: dict
    script_map: dict
    seconds: float
    extras: dict[str, Path]  # the kind's other published outputs (a drawing's render.json), in the run folder


@contextmanager
def run_folder(files: ModelFiles):
    files.require()
    files.runs_dir.mkdir(exist_ok=True)
    folder = files.runs_dir / uuid.uuid4().hex[:12]
    folder.mkdir()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def build_product(sandbox: Sandbox, script: str, folder: Path, kind: ModelKind = IFC, resolve_inputs=None) -> Product:
    """Contract check, build in the sandbox, validation and snapshot in a second sandbox run; raises RunFailed.
    resolve_inputs(params) names further input files of the run (see Editor.script_inputs)."""
    params = analysis.check_contract(script)
    inputs = resolve_inputs(params) if resolve_inputs else None
    product, recorded, seconds = sandbox.build(script, params, folder, kind, inputs)
    snapshot, extras = sandbox.inspect_with_outputs(folder, product, kind=kind)
    return Product(script, scripts.script_hash(script), product, snapshot, analysis.build_map(script, recorded), seconds, extras)


def _regular_file(path: Path) -> None:
    info = path.lstat()
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        raise RunFailed(f"{path.name} is not a plain file; nothing was published")


def publish_product(files: ModelFiles, product: Product) -> None:
    """Makes the product the model's working product: the only path to model.ifc (model.dxf and render.json)."""
    _regular_file(product.ifc)
    for name, path in product.extras.items():
        _regular_file(path)
        place_file(path, files.root / name, keep_source=False)
    place_file(product.ifc, files.ifc, keep_source=False)
    write_json_atomic(files.current_map, product.script_map)
    write_json_atomic(files.current_snapshot, product.snapshot)
    write_json_atomic(files.working, {"scriptHash": product.script_hash})


def counts_since(previous: dict | None, snapshot: dict) -> dict | None:
    """Element-level counts against the previous product; None when there is none or the diff fails (a diff
    failure never fails the run that made the product)."""
    if previous is None:
        return None
    try:
        return semantic_diff.counts(semantic_diff.diff_snapshots(previous, snapshot))
    except Exception:  # noqa: BLE001 - a malformed earlier snapshot must not turn a published run into an error
        logger.exception("semantic diff against the previous product failed")
        return None


def current_snapshot(files: ModelFiles) -> dict | None:
    try:
        return read_json(files.current_snapshot)
    except ValueError:
        return None
