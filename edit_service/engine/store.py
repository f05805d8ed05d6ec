"""A model's files in the shared data directory, atomic writes and the per-model lock."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from edit_service.engine.errors import Conflict, NotFound
from edit_service.engine.kinds import kind_of

MODEL_ID_RE = re.compile(r"^m_[0-9a-f]{16}$")
VERSION_RE = re.compile(r"^v([1-9]\d*)$")

_process_locks: dict[str, threading.Lock] = {}
_process_locks_guard = threading.Lock()


def write_atomic(path: Path, data: bytes | str) -> None:
    """Temp file in the same folder, fsync, rename: readers see the old or the new file, never a partial one. The
    folder must exist: nothing here creates folders, so a model deleted meanwhile is never brought back."""
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except FileNotFoundError:
        raise NotFound(f"{path.parent} is gone (the model was deleted)") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def place_file(source: Path, target: Path, *, keep_source: bool) -> None:
    """Puts an existing file at `target` atomically: a hard link when the source stays (same filesystem, no copy of
    a large IFC; safe because published files are only ever replaced by rename, never rewritten in place), else a
    rename. Never use it to hand a file to a sandbox run folder: the sandbox could write through the link."""
    temp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    temp.unlink(missing_ok=True)
    if keep_source:
        try:
            os.link(source, temp)
        except OSError:  # another filesystem: copy
            shutil.copyfile(source, temp)
    else:
        os.replace(source, temp)
    with open(temp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temp, target)
    _fsync_dir(target.parent)


def _fsync_dir(folder: Path) -> None:
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_json_atomic(path: Path, payload) -> None:
    write_atomic(path, json.dumps(payload, ensure_ascii=False, separators=(",", ":")))


def read_json(path: Path, default=None):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        return default


class ModelFiles:
    """Paths of one model. `script/` holds the edit service's state (staging, versions, maps, history)."""

    def __init__(self, data_dir: Path, model_id: str, lock_timeout: float = 30):
        self.lock_timeout = lock_timeout
        if not MODEL_ID_RE.match(model_id or ""):
            raise NotFound(f"model {model_id!r} not found (ids look like m_ + 16 lowercase hex digits)")
        self.model_id = model_id
        self.root = Path(data_dir) / "models" / model_id
        self.kind = kind_of(self.root)
        self.script_dir = self.root / "script"
        self.ifc = self.root / self.kind.product_name  # the working product: model.ifc, or model.dxf for a drawing
        self.bootstrap_ifc = self.root / "bootstrap.ifc"
        self.staging = self.script_dir / "staging.json"
        self.working = self.script_dir / "working.json"
        self.current_map = self.script_dir / "current.map.json"
        self.current_snapshot = self.script_dir / "current.snapshot.json"
        self.bootstrap_snapshot = self.script_dir / "bootstrap.snapshot.json"
        self.versions_dir = self.script_dir / "versions"
        self.cache_dir = self.script_dir / "cache"
        self.runs_dir = self.script_dir / "runs"
        self.history = self.script_dir / "edit-history.json"
        self.pending = self.script_dir / "pending.json"

    def exists(self) -> bool:
        return self.root.is_dir()

    def require(self) -> "ModelFiles":
        """The model exists; its script/ folder is made (never the model folder itself: a deleted model stays
        deleted)."""
        try:
            self.script_dir.mkdir(exist_ok=True)
        except FileNotFoundError:
            raise NotFound(f"model {self.model_id} not found") from None
        return self

    def version_file(self, version: str, suffix: str) -> Path:
        return self.versions_dir / f"{version}{suffix}"

    @contextmanager
    def lock(self):
        """One writer per model: a lock in this process plus a file lock across edit-service processes. A writer
        that waits longer than lock_timeout gets Conflict instead of waiting without end."""
        busy = Conflict(f"another operation on model {self.model_id} is running; try again when it has finished")
        with _process_locks_guard:
            process_lock = _process_locks.setdefault(self.model_id, threading.Lock())
        if not process_lock.acquire(timeout=self.lock_timeout):
            raise busy
        try:
            self.require()
            try:
                file_lock = FileLock(str(self.script_dir / ".lock"), timeout=self.lock_timeout)
                file_lock.acquire()
            except Timeout:
                raise busy from None
            try:
                yield
            finally:
                file_lock.release()
        finally:
            process_lock.release()
