"""Where a model's files live in the shared data directory, and atomic publishing of files."""

import os
import re
import tempfile
from pathlib import Path

from django.conf import settings

from models_app.models import MODEL_ID_PATTERN

MODEL_ID_RE = re.compile(rf"^{MODEL_ID_PATTERN}$")

IFC_FILE = "model.ifc"
XKT_FILE = "model.xkt"
METADATA_FILE = "metadata.json"
STATIC_OUTPUTS = (XKT_FILE, METADATA_FILE)


def model_dir(model_id: str) -> Path:
    if not MODEL_ID_RE.match(model_id):
        raise ValueError(f"not a model id: {model_id!r}")
    return Path(settings.MODELS_DIR) / model_id


def model_file(model_id: str, name: str) -> Path:
    return model_dir(model_id) / name


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish_file(source: Path, target: Path) -> None:
    """Move a finished file into place so readers see either the old or the new file, never a partial one."""
    with open(source, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(source, target)
    fsync_dir(target.parent)


def temp_path_beside(target: Path, suffix: str = ".tmp") -> Path:
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    return Path(name)
