"""Read-side queries on a model's converted outputs."""

from __future__ import annotations

import json
import threading
from functools import lru_cache

from models_app.storage import METADATA_FILE, model_file

# whitelisted override fields other than Name, looked up by property name in the element's property sets
PROPERTY_FIELDS = {"Description", "Classification", "FireRating", "Comments"}
_lock = threading.Lock()


@lru_cache(maxsize=8)
def _element_values(path: str, _version: int) -> dict[str, dict[str, str]]:
    """guid -> {field: value} for the override whitelist, from one version of a metadata.json."""
    with open(path, encoding="utf-8") as handle:
        metadata = json.load(handle)
    psets = {p["id"]: p for p in metadata.get("propertySets", [])}
    values: dict[str, dict[str, str]] = {}
    for obj in metadata.get("metaObjects", []):
        fields = {"Name": obj.get("name") or ""}
        for pset_id in obj.get("propertySetIds", ()):
            for row in psets.get(pset_id, {}).get("properties", ()):
                field = row.get("name")
                if field in PROPERTY_FIELDS and field not in fields and row.get("value") not in (None, ""):
                    fields[field] = str(row["value"])
        values[obj["id"]] = fields
    return values


def element_ifc_value(model_id: str, entity_id: str, field: str) -> str:
    """The element's value of a whitelisted field as converted from the IFC ("" when unknown or not converted)."""
    path = model_file(model_id, METADATA_FILE)
    try:
        version = path.stat().st_mtime_ns
    except FileNotFoundError:
        return ""
    with _lock:
        try:
            values = _element_values(str(path), version)
        except (OSError, ValueError):
            return ""
    return values.get(entity_id, {}).get(field, "")
