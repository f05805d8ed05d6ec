"""Drawing skeleton of a cad project: one rectangular room as centreline walls on A-WALL and its label. A delivery
(plans_app) fills PARAMS["plan"]: the walls then run around the rooms' extent, and each room with an outline is drawn
as a closed polyline on A-AREA (key room:<id>) with its name (key room-label:<id>); PARAMS["bimSupplement"] gives
walls their properties (by class IfcWall, or by key)."""

import dxf_lib as dl

PARAMS = {"name": "New drawing", "length": 8.0, "width": 6.0, "wall_layer": "A-WALL", "plan": None, "bimSupplement": None}
SUPPLEMENT_FIELDS = ("Classification", "FireRating", "Comments")


def extent(params):
    """(length, width) of the building: the rooms' extent when the plan has outlines, else PARAMS."""
    points = [p for room in (params["plan"] or {}).get("rooms", []) for p in room.get("outline", [])]
    if not points:
        return params["length"], params["width"]
    return max(x for x, _ in points), max(y for _, y in points)


def wall_props(params, key):
    supplement = params["bimSupplement"] or {}
    values = {**supplement.get("elementTypes", {}).get("IfcWall", {}), **supplement.get("elements", {}).get(key, {})}
    return {name: values[name] for name in SUPPLEMENT_FIELDS if name in values}


def build(params, out_path):
    doc = dl.new_doc(layers={params["wall_layer"]: {"color": 1}, "A-AREA": {"color": 5}, "A-ANNO": {"color": 7}})
    length, width = extent(params)
    corners = [(0.0, 0.0), (length, 0.0), (length, width), (0.0, width)]
    for index, side in enumerate(("south", "east", "north", "west")):
        (x1, y1), (x2, y2) = corners[index], corners[(index + 1) % 4]
        key = f"wall-{side}"
        dl.create_entity(doc, "LINE", key, layer=params["wall_layer"], x1=x1, y1=y1, x2=x2, y2=y2, props=wall_props(params, key))
    dl.create_entity(doc, "TEXT", "label-room", layer="A-ANNO", x=length / 2, y=width / 2, text=params["name"], height=0.3)
    for room in (r for r in (params["plan"] or {}).get("rooms", []) if r.get("outline")):
        xs, ys = [p[0] for p in room["outline"]], [p[1] for p in room["outline"]]
        dl.create_entity(doc, "LWPOLYLINE", f"room:{room['id']}", layer="A-AREA", points=[[x, y] for x, y in room["outline"]], closed=True,
                         props={"name": room["name"], "storey": room["storey"]})
        dl.create_entity(doc, "TEXT", f"room-label:{room['id']}", layer="A-ANNO", x=sum(xs) / len(xs), y=sum(ys) / len(ys), text=room["name"], height=0.3)
    dl.save(doc, out_path)
