"""A model's files in the shared data directory, atomic writes (core/files.py) and the per-model lock."""

from __future__ import annotations

import json
import re
import threading
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

# place_file moved to core/files.py; re-exported for edit_service/engine/workflow.py
from core.files import place_file  # noqa: F401
from core.files import write_atomic as write_file_atomic
from edit_service.engine.errors import Conflict, NotFound
from edit_service.engine.kinds import kind_of

MODEL_ID_RE = re.compile(r"^m_[0-9a-f]{16}$")
VERSION_RE = re.compile(r"^v([1-9]\d*)$")

_process_locks: dict[str, threading.Lock] = {}
_process_locks_guard = threading.Lock()


def write_atomic(path: Path, data: bytes | str) -> None:
    """core.files.write_atomic; NotFound when the model's folder is gone (the model was deleted meanwhile)."""
    try:
        write_file_atomic(path, data)
    except FileNotFoundError:
        if path.parent.is_dir():
            raise
        raise NotFound(f"{path.parent} is gone (the model was deleted)") from None


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
