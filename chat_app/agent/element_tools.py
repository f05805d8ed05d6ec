"""Element tools: the model's elements as the viewer knows them (metadata.json of the last conversion)."""

from __future__ import annotations

from chat_app.agent.tools import MODEL_ID, Tool, ToolError, ToolResult, bound_model_id, in_thread, json_output, object_schema
from issues_app.services import override_set
from models_app.services import model_metadata
from viewer_gateway.envelope import ApiError


async def _metadata(model_id: str) -> dict:
    try:
        return await in_thread(model_metadata)(model_id)
    except ApiError as exc:
        raise ToolError(str(exc.detail)) from None


def _storey_of(obj: dict, by_id: dict) -> str:
    parent = by_id.get(obj.get("parent"))
    while parent is not None and parent["type"] != "IfcBuildingStorey":
        parent = by_id.get(parent.get("parent"))
    return parent.get("name", "") if parent else ""


async def _find_elements(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    metadata = await _metadata(model_id)
    by_id = {o["id"]: o for o in metadata.get("metaObjects", [])}
    text = (arguments.get("text") or "").lower()
    ifc_type = (arguments.get("ifcType") or "").lower()
    storey = (arguments.get("storey") or "").lower()
    found = []
    for obj in metadata.get("metaObjects", []):
        if ifc_type and obj["type"].lower() != ifc_type:
            continue
        if text and text not in (obj.get("name") or "").lower() and text not in obj["id"].lower():
            continue
        obj_storey = _storey_of(obj, by_id)
        if storey and storey not in obj_storey.lower():
            continue
        found.append({"guid": obj["id"], "type": obj["type"], "name": obj.get("name", ""), "parent": obj.get("parent"), "storey": obj_storey})
    limit = arguments.get("limit", 50)
    return ToolResult(json_output({"total": len(found), "elements": found[:limit]}), title=f"{len(found)} element(s) found",
                      metadata={"modelId": model_id, "total": len(found), "guids": [e["guid"] for e in found[:limit]]})


async def _get_element(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    metadata = await _metadata(model_id)
    obj = next((o for o in metadata.get("metaObjects", []) if o["id"] == arguments["guid"]), None)
    if obj is None:
        raise ToolError(f"no element {arguments['guid']} in the model (find_elements lists them)")
    psets = {p["id"]: p for p in metadata.get("propertySets", [])}
    properties = {psets[i]["name"]: {row["name"]: row.get("value") for row in psets[i].get("properties", [])} for i in obj.get("propertySetIds", []) if i in psets}
    overrides = (await in_thread(override_set)(model_id)).get(obj["id"], {})
    element = {"guid": obj["id"], "type": obj["type"], "name": obj.get("name", ""), "parent": obj.get("parent"), "propertySets": properties, "overrides": overrides}
    return ToolResult(json_output(element), title=f"{obj.get('name') or obj['id']} ({obj['type']})", metadata={"modelId": model_id, "guid": obj["id"]})


ELEMENT_TOOLS = [
    Tool("find_elements", "Elements of the model by name text, IFC class (e.g. IfcWall) or storey name.", object_schema({
        **MODEL_ID, "text": {"type": "string"}, "ifcType": {"type": "string"}, "storey": {"type": "string"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 500},
    }), _find_elements),
    Tool("get_element", "One element: class, name, property sets and its effective overrides.", object_schema({**MODEL_ID, "guid": {"type": "string", "minLength": 1}}, ("guid",)), _get_element),
]
