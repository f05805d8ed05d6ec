"""Element tools: the model's elements as the viewer knows them (metadata.json of the last conversion). Parent links
are walked once per element and a loop in them (an element that aggregates itself, or a cycle) ends the walk, so a
broken file can slow nothing down."""

from __future__ import annotations

from chat_app.agent.tools import ToolCall, ToolError, ToolResult, agent_tool, call_service, json_output
from issues_app.selectors import overrides_of_model
from models_app.selectors import model_metadata

STOREY = "IfcBuildingStorey"


def storeys_by_id(objects: list[dict]) -> dict[str, str]:
    """id -> name of the storey an object is in ("" when none): the nearest IfcBuildingStorey up its parent links.
    Each link is followed once (results are shared along the path); a loop ends the walk with no storey."""
    by_id = {o["id"]: o for o in objects}
    above: dict[str, str] = {}
    for obj in objects:
        path, seen, current, result = [], set(), obj, ""
        while current is not None:
            if current["id"] in above:
                result = above[current["id"]]
                break
            if current["id"] in seen:
                break  # a loop of parent links
            seen.add(current["id"])
            path.append(current["id"])
            parent = by_id.get(current.get("parent"))
            if parent is not None and parent["type"] == STOREY:
                result = parent.get("name", "")
                break
            current = parent
        for object_id in path:
            above[object_id] = result
    return above


@agent_tool("find_elements", "Elements of the model by name text, IFC class (e.g. IfcWall) or storey name.", {
    "text": {"type": "string"}, "ifcType": {"type": "string"}, "storey": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 500},
}, takes_model=True)
def find_elements(call: ToolCall) -> ToolResult:
    objects = call_service(model_metadata, call.model_id).get("metaObjects", [])
    storeys = storeys_by_id(objects)
    text, ifc_type, storey = ((call.arguments.get(k) or "").lower() for k in ("text", "ifcType", "storey"))
    found = []
    for obj in objects:
        if ifc_type and obj["type"].lower() != ifc_type:
            continue
        if text and text not in (obj.get("name") or "").lower() and text not in obj["id"].lower():
            continue
        if storey and storey not in storeys.get(obj["id"], "").lower():
            continue
        found.append({"guid": obj["id"], "type": obj["type"], "name": obj.get("name", ""), "parent": obj.get("parent"), "storey": storeys.get(obj["id"], "")})
    limit = call.arguments.get("limit", 50)
    return ToolResult(json_output({"total": len(found), "elements": found[:limit]}), title=f"{len(found)} element(s) found",
                      metadata={"modelId": call.model_id, "total": len(found), "guids": [e["guid"] for e in found[:limit]]})


@agent_tool("get_element", "One element: class, name, property sets and its effective overrides.", {"guid": {"type": "string", "minLength": 1}}, ("guid",), takes_model=True)
def get_element(call: ToolCall) -> ToolResult:
    metadata = call_service(model_metadata, call.model_id)
    guid = call.arguments["guid"]
    obj = next((o for o in metadata.get("metaObjects", []) if o["id"] == guid), None)
    if obj is None:
        raise ToolError(f"no element {guid} in the model (find_elements lists them)")
    psets = {p["id"]: p for p in metadata.get("propertySets", [])}
    properties = {psets[i]["name"]: {row["name"]: row.get("value") for row in psets[i].get("properties", [])} for i in obj.get("propertySetIds", []) if i in psets}
    overrides = call_service(overrides_of_model, call.model_id).get(obj["id"], {})
    element = {"guid": obj["id"], "type": obj["type"], "name": obj.get("name", ""), "parent": obj.get("parent"), "propertySets": properties, "overrides": overrides}
    return ToolResult(json_output(element), title=f"{obj.get('name') or obj['id']} ({obj['type']})", metadata={"modelId": call.model_id, "guid": obj["id"]})
