"""The facts a clash shows of each of its elements, from the model's metadata.json: class, name, storey."""

from __future__ import annotations

STOREY = "IfcBuildingStorey"


def facts(metadata: dict) -> dict[str, dict]:
    """{GlobalId: {"type", "name", "storey"}} of every object of metadata.json; storey is the name of the nearest
    IfcBuildingStorey above it along the object tree ("" when none; a storey's own is itself)."""
    objects = {item["id"]: item for item in metadata.get("metaObjects", [])}
    storeys: dict[str, str] = {}

    def storey_of(guid: str) -> str:
        path = []
        found = ""
        current = guid
        while current in objects and current not in storeys:
            path.append(current)
            item = objects[current]
            if item.get("type") == STOREY:
                found = item.get("name") or ""
                break
            current = item.get("parent")
            if current in path:  # a cycle would be a broken file: no storey
                break
        else:
            found = storeys.get(current, "")
        for seen in path:
            storeys[seen] = found
        return found

    return {guid: {"type": item.get("type", ""), "name": item.get("name") or "", "storey": storey_of(guid)}
            for guid, item in objects.items()}
