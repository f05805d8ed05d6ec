"""Big versions v1, v2, ... of a model: append-only; script, script map and snapshot kept for every version, only
the latest IFC materialised; an older IFC is rebuilt from its script on demand and cached.

A version exists when its meta file v{n}.json exists; it is written last, after the version's other files, so a
crash leaves a version either complete or absent.
"""

from __future__ import annotations

from pathlib import Path

from core.files import place_file
from edit_service.engine.errors import NotFound
from edit_service.engine.staging import now_iso
from edit_service.engine.store import VERSION_RE, ModelFiles, read_json, write_atomic, write_json_atomic


class Versions:
    def __init__(self, files: ModelFiles):
        self.files = files

    def names(self) -> list[str]:
        if not self.files.versions_dir.is_dir():
            return []
        found = []
        for path in self.files.versions_dir.glob("v*.json"):
            match = VERSION_RE.match(path.name.removesuffix(".json"))
            if match and not path.name.endswith(".map.json") and not path.name.endswith(".snapshot.json"):
                found.append(int(match.group(1)))
        return [f"v{n}" for n in sorted(found)]

    def latest(self) -> str | None:
        names = self.names()
        return names[-1] if names else None

    def meta(self, version: str) -> dict:
        if not VERSION_RE.match(version or ""):
            raise NotFound(f"version {version!r} not found (versions look like v1, v2, ...)")
        meta = read_json(self.files.version_file(version, ".json"))
        if meta is None:
            raise NotFound(f"version {version} not found")
        return meta

    def listing(self) -> list[dict]:
        return [self.meta(name) for name in self.names()]

    def script(self, version: str) -> str:
        self.meta(version)
        return self.files.version_file(version, ".py").read_text(encoding="utf-8")

    def snapshot(self, version: str) -> dict:
        self.meta(version)
        return read_json(self.files.version_file(version, ".snapshot.json"), {})

    def previous(self, number: int) -> str | None:
        earlier = [name for name in self.names() if int(name[1:]) < number]
        return earlier[-1] if earlier else None

    def by_request_id(self, request_id: str) -> dict | None:
        """The meta of the version a save with this requestId made, if any."""
        return next((meta for meta in reversed(self.listing()) if meta.get("requestId") == request_id), None)

    def create(self, *, script: str, script_hash: str, ifc: Path, snapshot: dict, script_map: dict, note: str, request_id: str | None = None,
               author: str = "") -> dict:
        """Writes version v{n+1}; its meta carries the save's author (versions saved before authors were recorded
        have none, listed as "")."""
        previous = self.latest()
        version = f"v{int(previous[1:]) + 1 if previous else 1}"
        self.files.versions_dir.mkdir(exist_ok=True)
        write_atomic(self.files.version_file(version, ".py"), script)
        write_json_atomic(self.files.version_file(version, ".map.json"), script_map)
        write_json_atomic(self.files.version_file(version, ".snapshot.json"), snapshot)
        place_file(ifc, self.files.version_file(version, self.files.kind.suffix), keep_source=True)
        for name in self.files.kind.extra_outputs:  # a drawing's render.json, so discard and rollback need no run
            if (self.files.root / name).is_file():
                place_file(self.files.root / name, self.files.version_file(version, f".{name}"), keep_source=True)
        meta = {"version": version, "createdAt": now_iso(), "author": author, "note": note, "scriptHash": script_hash, **({"requestId": request_id} if request_id else {})}
        write_json_atomic(self.files.version_file(version, ".json"), meta)  # the commit point
        if previous:
            self.files.version_file(previous, self.files.kind.suffix).unlink(missing_ok=True)  # only the latest IFC stays materialised
        return meta

    def ifc_path(self, version: str) -> Path | None:
        """The version's IFC when materialised (latest) or cached; None when it must be rebuilt."""
        self.meta(version)
        for path in (self.files.version_file(version, self.files.kind.suffix), self.files.cache_dir / f"{version}{self.files.kind.suffix}"):
            if path.is_file():
                return path
        return None

    def cache_ifc(self, version: str, ifc: Path) -> Path:
        target = self.files.cache_dir / f"{version}{self.files.kind.suffix}"
        self.files.cache_dir.mkdir(exist_ok=True)
        place_file(ifc, target, keep_source=False)  # the rebuilt IFC's run folder is discarded anyway
        return target

    def remove_incomplete(self) -> None:
        """Files of a version whose meta (commit point) was never written: left by a crash mid-save."""
        complete = set(self.names())
        if not self.files.versions_dir.is_dir():
            return
        for path in self.files.versions_dir.iterdir():
            version = path.name.split(".", 1)[0]
            if VERSION_RE.match(version) and version not in complete or path.name.endswith(".tmp"):
                path.unlink(missing_ok=True)
