"""Element-level semantic diff of two snapshots (see edit_service/sandbox/snapshot.py).

added/removed: GlobalIds only in target/base. changed: per GlobalId the fields whose typed values differ, with old
and new values; `class` is reported when an element keeps its GlobalId but changes class. No geometry and no
entity references are compared, so placement-only or reference-only changes do not show. Drawings (DXF) use the
same engine with keys for GlobalIds; their snapshots carry the geometry, because in a drawing it is the content.
"""

from __future__ import annotations


def diff_snapshots(base: dict, target: dict) -> dict:
    added = sorted(guid for guid in target if guid not in base)
    removed = sorted(guid for guid in base if guid not in target)
    changed = []
    for guid in sorted(base.keys() & target.keys()):
        old, new = base[guid], target[guid]
        changes = []
        if old["class"] != new["class"]:
            changes.append({"field": "class", "old": old["class"], "new": new["class"]})
        old_attributes, new_attributes = old["attributes"], new["attributes"]
        if old_attributes != new_attributes:
            for field in sorted(old_attributes.keys() | new_attributes.keys()):
                before, after = old_attributes.get(field), new_attributes.get(field)
                if not _same(before, after):
                    changes.append({"field": field, "old": before, "new": after})
        if changes:
            changed.append({"guid": guid, "changes": changes})
    return {"added": added, "removed": removed, "changed": changed}


def _same(a, b) -> bool:
    """Typed equality: 1 == 1.0, but True is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def counts(diff: dict) -> dict:
    return {"added": len(diff["added"]), "removed": len(diff["removed"]), "changed": len(diff["changed"])}


def labels(*snapshots: dict) -> dict:
    """GlobalId -> readable name ("Name (IfcClass)", or the class alone) over the given snapshots."""
    result = {}
    for snapshot in snapshots:
        for guid, element in snapshot.items():
            result.setdefault(guid, f"{element['name']} ({element['class']})" if element["name"] else element["class"])
    return result
