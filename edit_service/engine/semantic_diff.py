"""Element-level semantic diff of two snapshots (see edit_service/sandbox/snapshot.py).

added/removed: GlobalIds only in target/base. changed: per GlobalId the fields whose typed values differ, with old
and new values; `class` is reported when an element keeps its GlobalId but changes class. Entity references are
not compared. Geometry is (when both snapshots recorded it): a "placement" change when the element moved or
turned, a "shape" change when its body was resized or otherwise reshaped, each with a readable "summary", and the
changed item gets "geometry" with the measured facts (see geometry_changes). Below the tolerances a rebuilt,
identical element is unchanged. An element without recorded geometry (a snapshot older than geometry) is unknown,
never changed. Drawings (DXF) use the same engine with keys for GlobalIds; their snapshots carry the geometry in
the attributes, because in a drawing it is the content.
"""

from __future__ import annotations

import math

LENGTH_TOLERANCE = 1e-4  # metres: moves and size changes below a tenth of a millimetre are float noise
ANGLE_TOLERANCE = 0.01  # degrees
VOLUME_TOLERANCE = 1e-4  # relative


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
        geometry = geometry_changes(old.get("geometry"), new.get("geometry"))
        if geometry is not None:
            changes.extend(geometry[0])
        if changes:
            changed.append({"guid": guid, "changes": changes, **({"geometry": geometry[1]} if geometry and geometry[1] else {})})
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


# --- geometry ----------------------------------------------------------------------------------------------------


def _sub(a, b):
    return [x - y for x, y in zip(a, b, strict=True)]


def _cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def _norm(a) -> float:
    return math.sqrt(sum(x * x for x in a))


def _unit(a) -> list[float]:
    length = _norm(a) or 1.0
    return [v / length for v in a]


def _frame(placement: dict) -> list[list[float]]:
    """Rows of the rotation matrix whose columns are the local X, Y, Z axes (made orthonormal: stored axes are
    rounded, and acos near 1 would turn that rounding into tenths of a degree)."""
    z = _unit(placement["zAxis"])
    y = _unit(_cross(z, placement["xAxis"]))
    x = _cross(y, z)
    return [[x[i], y[i], z[i]] for i in range(3)]


def _turn(old: dict, new: dict) -> dict | None:
    """The rotation from old to new axes (world frame), as signed degrees about a unit axis; None below tolerance."""
    a, b = _frame(old), _frame(new)
    r = [[sum(b[i][k] * a[j][k] for k in range(3)) for j in range(3)] for i in range(3)]  # B A^T
    axis = [r[2][1] - r[1][2], r[0][2] - r[2][0], r[1][0] - r[0][1]]  # 2 sin(angle) times the unit axis
    degrees = math.degrees(math.atan2(_norm(axis) / 2, (r[0][0] + r[1][1] + r[2][2] - 1) / 2))
    if degrees < ANGLE_TOLERANCE:
        return None
    if _norm(axis) < 1e-9:  # a half turn: the axis is the column of R + I that is not zero
        columns = [[r[i][j] + (1 if i == j else 0) for i in range(3)] for j in range(3)]
        axis = max(columns, key=_norm)
    length = _norm(axis)
    axis = [v / length for v in axis]
    main = max(range(3), key=lambda i: abs(axis[i]))
    if axis[main] < 0:  # report about +X, +Y or +Z with a signed angle (counter-clockwise positive)
        axis, degrees = [-v for v in axis], -degrees
    about = "XYZ"[main] if abs(abs(axis[main]) - 1) < 1e-6 else None
    return {"degrees": round(degrees, 3), "axis": [round(v, 6) + 0.0 for v in axis], "about": about}


def _direction(delta: list[float]) -> str:
    moving = [(axis, v) for axis, v in zip("XYZ", delta, strict=True) if abs(v) >= LENGTH_TOLERANCE]
    if len(moving) == 1:
        axis, value = moving[0]
        return f"{'+' if value > 0 else '-'}{axis}"
    return "(" + ", ".join(f"{v:+.2f}" for v in delta) + ")"


def _size(shape: dict) -> list[float]:
    return [round(hi - lo, 6) + 0.0 for lo, hi in zip(shape["min"], shape["max"], strict=True)]


def _placement_change(old: dict | None, new: dict | None) -> tuple[list[str], dict]:
    if old is None or new is None:
        return ([] if old is new else ["placement " + ("added" if old is None else "removed")]), {}
    words, facts = [], {}
    delta = _sub(new["origin"], old["origin"])
    distance = _norm(delta)
    if distance >= LENGTH_TOLERANCE:
        facts["moved"] = {"dx": round(delta[0], 6) + 0.0, "dy": round(delta[1], 6) + 0.0, "dz": round(delta[2], 6) + 0.0, "distance": round(distance, 6)}
        words.append(f"moved {distance:.2f} m {_direction(delta)}")
    turn = _turn(old, new)
    if turn is not None:
        facts["turned"] = turn
        about = f"about {turn['about']}" if turn["about"] else "about (" + ", ".join(f"{v:.2f}" for v in turn["axis"]) + ")"
        words.append(f"turned {turn['degrees']:.1f}° {about}")
    return words, facts


def _shape_change(old: dict | None, new: dict | None) -> tuple[list[str], dict]:
    if old is None or new is None:
        return ([] if old is new else ["shape " + ("added" if old is None else "removed")]), {}
    words, facts = [], {}
    old_size, new_size = _size(old), _size(new)
    if any(abs(a - b) >= LENGTH_TOLERANCE for a, b in zip(old_size, new_size, strict=True)):
        facts["size"] = {"old": old_size, "new": new_size}
        changed = [(a, b) for a, b in zip(old_size, new_size, strict=True) if abs(a - b) >= LENGTH_TOLERANCE]
        words.append("resized " + ", ".join(f"{a:.2f} → {b:.2f} m" for a, b in changed))
    old_volume, new_volume = old.get("volume"), new.get("volume")
    if old_volume is not None and new_volume is not None and abs(new_volume - old_volume) > VOLUME_TOLERANCE * max(abs(old_volume), abs(new_volume), 1e-9):
        facts["volume"] = {"old": old_volume, "new": new_volume}
        words.append(f"volume {old_volume:.3f} → {new_volume:.3f} m³")
    if old.get("fingerprint") != new.get("fingerprint"):
        facts["representationChanged"] = True
        if not words:
            words.append("representation changed")
    return words, facts


def _shape_value(shape: dict | None) -> dict | None:
    return None if shape is None else {"size": _size(shape), "volume": shape.get("volume"), "fingerprint": shape.get("fingerprint")}


def geometry_changes(old: dict | None, new: dict | None) -> tuple[list[dict], dict] | None:
    """The "placement" and "shape" change entries between two elements' recorded geometry and the facts for the
    changed item's "geometry" key: moved {dx, dy, dz, distance} (metres, world axes, of the placement origin),
    turned {degrees, axis, about}, size {old, new} (bounding box in the element's own axes, so a turn alone is no
    resize), volume {old, new} (m³), representationChanged. None when either side has no recorded geometry."""
    if old is None or new is None:
        return None
    changes, facts = [], {}
    placement_words, placement_facts = _placement_change(old.get("placement"), new.get("placement"))
    if placement_words:
        changes.append({"field": "placement", "old": old.get("placement"), "new": new.get("placement"), "summary": "; ".join(placement_words)})
        facts.update(placement_facts)
    shape_words, shape_facts = _shape_change(old.get("shape"), new.get("shape"))
    if shape_words or shape_facts:
        changes.append({"field": "shape", "old": _shape_value(old.get("shape")), "new": _shape_value(new.get("shape")), "summary": "; ".join(shape_words)})
        facts.update(shape_facts)
    return changes, facts


def has_geometry(snapshot: dict) -> bool:
    """Whether the snapshot recorded geometry (written after geometry was added; an empty one needs none)."""
    return not snapshot or any("geometry" in element for element in snapshot.values())
