"""Pending list (bookkeeping only) and the read-only edit history (edit-history.json) of a model."""

from __future__ import annotations

import secrets

from edit_service.engine.staging import now_iso
from edit_service.engine.store import ModelFiles, read_json, write_json_atomic


def new_entry_id() -> str:
    return "e_" + secrets.token_hex(6)


def pending(files: ModelFiles) -> list[dict]:
    return read_json(files.pending, [])


def discard_pending(files: ModelFiles) -> int:
    count = len(pending(files))
    write_json_atomic(files.pending, [])
    return count


def history(files: ModelFiles) -> list[dict]:
    return read_json(files.history, [])


def append_history(files: ModelFiles, entries: list[dict]) -> list[dict]:
    """Appends entries (guid, changes, author, provenance, operation, ...), giving each an id and timestamp."""
    stamped = [{"id": new_entry_id(), "timestamp": now_iso(), **entry} for entry in entries]
    write_json_atomic(files.history, history(files) + stamped)
    return stamped


def user_edit_entries(origin: str, author: str, events: list[dict]) -> list[dict]:
    return [
        {
            "guid": event["guid"],
            "name": event.get("name", ""),
            "kind": event["kind"],
            "changes": [{"field": c["field"], "oldValue": c.get("oldValue"), "newValue": c.get("newValue")} for c in event.get("changes", [])],
            "author": author,
            "provenance": {"source": "UI"},
            "operation": "update",
            "origin": origin,
            "modifiedBy": "USER",
        }
        for event in events
    ]
