"""Where a model's files live in the shared data directory."""

import re
from pathlib import Path

from django.conf import settings

# moved to core/files.py; re-exported for models_app/services.py, version_geometry.py and issues_app/services.py
from core.files import fsync_dir, publish_file, temp_path_beside  # noqa: F401
from core.files import write_atomic as publish_text  # noqa: F401
from models_app.conversion.pipeline import CLASH_GEOMETRY_FILE, ELEMENT_BOUNDS_FILE, ELEMENT_VALUES_FILE, GEOREFERENCE_FILE, METADATA_FILE
from models_app.conversion.runner import XKT_FILE
from models_app.models import MODEL_ID_PATTERN, VERSION_PATTERN

MODEL_ID_RE = re.compile(rf"^{MODEL_ID_PATTERN}$")
VERSION_RE = re.compile(rf"^{VERSION_PATTERN}$")
VERSION_META_RE = re.compile(r"^v([1-9]\d*)\.json$")

IFC_FILE = "model.ifc"
DXF_FILE = "model.dxf"
RENDER_FILE = "render.json"  # a drawing's 2D preview, published by the edit service with model.dxf
KIND_FILE = "model.kind"  # tells the edit service a model is a drawing (edit_service/engine/kinds.py)
BOOTSTRAP_IFC_FILE = "bootstrap.ifc"  # the uploaded original, kept by the edit service when a script takes over
# conversion outputs; element-values.json holds the IFC values of the override whitelist and element-bounds.json each
# element's bounds (both for issues_app), clash-geometry.bin every element's triangles and georeference.json the
# model's map placement (both for coordination_app), not served
# Published in this order: a viewer loading both during a publish sees the new metadata before the new geometry.
STATIC_OUTPUTS = (ELEMENT_VALUES_FILE, ELEMENT_BOUNDS_FILE, CLASH_GEOMETRY_FILE, GEOREFERENCE_FILE, METADATA_FILE, XKT_FILE)
# the conversion outputs of saved versions, one folder each (versions/v3/model.xkt ...), made on request; not the
# edit service's script/versions/
VERSION_GEOMETRY_DIR = "versions"
REVISIONS_DIR = "revisions"  # an uploaded model's revisions (revision_file)


def model_dir(model_id: str) -> Path:
    if not MODEL_ID_RE.match(model_id):
        raise ValueError(f"not a model id: {model_id!r}")
    return Path(settings.MODELS_DIR) / model_id


def trashed_model_dir(model_id: str) -> Path:
    """Where a model's folder lies while the model is in the trash: outside models/, so neither the edit service nor
    any file route of the gateway finds it."""
    if not MODEL_ID_RE.match(model_id):
        raise ValueError(f"not a model id: {model_id!r}")
    return Path(settings.DATA_DIR) / "trash" / "models" / model_id


def model_file(model_id: str, name: str) -> Path:
    return model_dir(model_id) / name


def version_geometry_root(model_id: str) -> Path:
    return model_dir(model_id) / VERSION_GEOMETRY_DIR


def version_geometry_dir(model_id: str, version: str) -> Path:
    if not VERSION_RE.match(version):
        raise ValueError(f"not a version: {version!r}")
    return version_geometry_root(model_id) / version


def latest_saved_product(model_id: str, suffix: str = ".ifc") -> Path | None:
    """The product (IFC, or DXF for a drawing) of the model's latest saved big version (the edit service keeps only
    that one materialised)."""
    versions = model_dir(model_id) / "script" / "versions"
    numbers = [int(m.group(1)) for p in versions.glob("v*.json") if (m := VERSION_META_RE.match(p.name))]
    if not numbers:
        return None
    path = versions / f"v{max(numbers)}{suffix}"
    return path if path.is_file() else None


def revisions_dir(model_id: str) -> Path:
    """An uploaded model's revisions, one IFC each (v1.ifc, v2.ifc, ...), never changed once written; the edit
    service reads them for revision diffs (edit_service/revisions.py)."""
    return model_dir(model_id) / REVISIONS_DIR


def revision_file(model_id: str, version: str) -> Path:
    if not VERSION_RE.match(version):
        raise ValueError(f"not a version: {version!r}")
    return revisions_dir(model_id) / f"{version}.ifc"


def script_state_present(model_id: str) -> bool:
    """The model's product comes from a build script: a script was staged or run on it (the edit service then kept
    the upload as bootstrap.ifc, or the model was born from a script), or it has a saved script version."""
    script = model_dir(model_id) / "script"
    return (
        model_file(model_id, BOOTSTRAP_IFC_FILE).exists()
        or (script / "staging.json").exists()
        or (script / "working.json").exists()
        or any(VERSION_META_RE.match(p.name) for p in (script / "versions").glob("v*.json"))
    )


def file_signature(path: Path) -> str:
    """Changes whenever the file is replaced or rewritten (inode, size, mtime)."""
    stat = path.stat()
    return f"{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}"
