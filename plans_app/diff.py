"""Field-by-field diff of two states of the plan files, by JSON path, with old and new values (deepdiff).

Lists whose items all carry a unique `id` are compared by id, not by position: a room inserted at the front is one
added room, not every room changed. Paths read like $.rooms[R101].area (ids in brackets) or $.storeys[0].name.
Numbers within TOLERANCE of each other are equal: outlines and areas computed by a tool carry float noise, which is
no edit."""

from __future__ import annotations

ID_KEY = "\x00id:"  # marks a dict key that came from an item id
TOLERANCE = 1e-6  # a micrometre (or square micrometre): far below any value a plan states


def _by_id(value):
    if isinstance(value, dict):
        return {key: _by_id(item) for key, item in value.items()}
    if isinstance(value, list):
        ids = [item.get("id") for item in value if isinstance(item, dict)]
        if value and len(ids) == len(value) and all(isinstance(i, str) for i in ids) and len(set(ids)) == len(ids):
            return {ID_KEY + item["id"]: _by_id(item) for item in value}
        return [_by_id(item) for item in value]
    return value


def _plain(value):
    """A normalised value back in its document form."""
    if isinstance(value, dict):
        if value and all(isinstance(k, str) and k.startswith(ID_KEY) for k in value):
            return [_plain(item) for item in value.values()]
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _path(parts: list) -> str:
    text = "$"
    for part in parts:
        if isinstance(part, str) and part.startswith(ID_KEY):
            text += f"[{part[len(ID_KEY):]}]"
        elif isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}"
    return text


def diff_documents(old: dict | None, new: dict | None) -> list[dict]:
    """[{path, kind: added|removed|changed, old, new}] between two versions of one document."""
    if old is None or new is None:
        if old == new:
            return []
        return [{"path": "$", "kind": "added" if old is None else "removed", "old": old, "new": new}]
    from deepdiff import DeepDiff  # on the first diff: ~0.1 s of every gateway's start otherwise
    from deepdiff.helper import NotPresent

    tree = DeepDiff(_by_id(old), _by_id(new), view="tree", threshold_to_diff_deeper=0, ignore_numeric_type_changes=True, verbose_level=2,
                    math_epsilon=TOLERANCE)
    changes = []
    for report, levels in tree.items():
        for level in levels:
            before = None if isinstance(level.t1, NotPresent) else _plain(level.t1)
            after = None if isinstance(level.t2, NotPresent) else _plain(level.t2)
            kind = "added" if "added" in report else "removed" if "removed" in report else "changed"
            changes.append({"path": _path(level.path(output_format="list")), "kind": kind, "old": before, "new": after})
    return sorted(changes, key=lambda change: change["path"])


def diff_states(old: dict, new: dict) -> dict:
    """Diff of two states {file name: document}: {changes: [{file, path, kind, old, new}], stats}."""
    changes = [{"file": name, **change} for name in old for change in diff_documents(old[name], new[name])]
    stats = {kind: sum(1 for c in changes if c["kind"] == kind) for kind in ("added", "removed", "changed")}
    return {"changes": changes, "stats": stats}
