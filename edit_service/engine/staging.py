"""The staging chain of a model: at most MAX_STATES script states with a cursor (undo/redo), persisted atomically.

states[0] is the oldest reachable state: the saved version's script ("base") when staging started from one, which
never falls off, so undo always reaches it. Up to MAX_STATES staged steps follow it; a new step after an undo drops
the redo branch; beyond MAX_STATES the oldest staged step falls off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from edit_service.engine.errors import Conflict, Invalid
from edit_service.engine.store import read_json, write_json_atomic

MAX_STATES = 10


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Staging:
    states: list[dict] = field(default_factory=list)
    cursor: int = -1

    @classmethod
    def load(cls, path: Path) -> "Staging":
        data = read_json(path)
        if not data or not data.get("states"):
            return cls()
        return cls(states=data["states"], cursor=int(data["cursor"]))

    def save(self, path: Path) -> None:
        write_json_atomic(path, {"states": self.states, "cursor": self.cursor})

    @property
    def active(self) -> bool:
        return bool(self.states)

    @property
    def current(self) -> dict | None:
        return self.states[self.cursor] if self.states else None

    def push(self, script: str, *, note: str = "", kind: str = "edit", base_script: str | None = None, base_note: str = "") -> None:
        if not self.states and base_script is not None:
            self.states.append({"script": base_script, "note": base_note, "kind": "base", "createdAt": now_iso()})
            self.cursor = 0
        self.states = self.states[: self.cursor + 1]
        self.states.append({"script": script, "note": note, "kind": kind, "createdAt": now_iso()})
        first_step = 1 if self.states[0]["kind"] == "base" else 0
        while len(self.states) - first_step > MAX_STATES:
            del self.states[first_step]
        self.cursor = len(self.states) - 1

    def undo(self) -> None:
        if self.cursor <= 0:
            raise Conflict("nothing to undo")
        self.cursor -= 1

    def redo(self) -> None:
        if not self.states or self.cursor >= len(self.states) - 1:
            raise Conflict("nothing to redo")
        self.cursor += 1

    def pair(self, start: int | None, end: int | None) -> tuple[int, int]:
        """Validated (from, to) step indices over states[0..cursor]; default the last two."""
        if not self.states:
            raise Invalid("nothing is staged")
        last = self.cursor
        start = max(0, last - 1) if start is None else start
        end = last if end is None else end
        for name, index in (("from", start), ("to", end)):
            if not 0 <= index <= last:
                raise Invalid(f"{name}={index} is outside the staged steps 0..{last}")
        return start, end

    def summary(self) -> dict:
        return {"steps": len(self.states), "cursor": self.cursor if self.states else None, "canUndo": self.cursor > 0, "canRedo": 0 <= self.cursor < len(self.states) - 1}
