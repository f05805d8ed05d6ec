"""Skeleton of a new IFC project: a box building with a floor slab and four external walls per storey, ready to be
grown by the agent or by hand.

PARAMS holds every tunable value. A delivery (plans_app) fills PARAMS["plan"] (storeys and rooms of the room
programme) and PARAMS["bimSupplement"] (properties by IFC class and by design key); without them the building has
PARAMS["storeys"] storeys of PARAMS["storey_height"]. Elements come from script_lib.create_entity, whose GlobalIds
are derived from the keys, so the same script and params always give the same model."""

import script_lib as sl

PARAMS = {
    "name": "New project",
    "storeys": 1,
    "storey_height": 3.0,
    "length": 10.0,
    "width": 8.0,
    "wall_thickness": 0.3,
    "slab_thickness": 0.25,
    "external_wall_fire_rating": "F30",
    "plan": None,
    "bimSupplement": None,
}
SUPPLEMENT_FIELDS = ("Classification", "FireRating", "Comments")


def supplement_for(params, ifc_class, key):
    """Properties of the BIM supplement for one element: its class's, then its own (an element beats its type)."""
    supplement = params["bimSupplement"] or {}
    values = {**supplement.get("elementTypes", {}).get(ifc_class, {}), **supplement.get("elements", {}).get(key, {})}
    psets = dict(values.pop("psets", {}))
    fields = {name: values[name] for name in SUPPLEMENT_FIELDS if name in values}
    if fields:
        psets["BIM_Supplement"] = fields
    return psets


def storey_list(params):
    plan = params["plan"]
    if plan and plan.get("storeys"):
        return [(s["id"], s["name"], s["elevation"], s["height"]) for s in plan["storeys"]]
    height = params["storey_height"]
    return [(f"S{level}", f"Level {level}", level * height, height) for level in range(params["storeys"])]


def footprint(params):
    """(length, width) of the building: the rooms' extent when the plan has outlines, else PARAMS."""
    points = [p for room in (params["plan"] or {}).get("rooms", []) for p in room.get("outline", [])]
    if not points:
        return params["length"], params["width"]
    return max(x for x, _ in points), max(y for _, y in points)


def build(params, out_path):
    model = sl.new_model(params["name"])
    length, width = footprint(params)
    thickness = params["wall_thickness"]
    walls = {
        "south": dict(x=0.0, y=0.0, width=length, depth=thickness),
        "north": dict(x=0.0, y=width - thickness, width=length, depth=thickness),
        "west": dict(x=0.0, y=thickness, width=thickness, depth=width - 2 * thickness),
        "east": dict(x=length - thickness, y=thickness, width=thickness, depth=width - 2 * thickness),
    }
    rooms = (params["plan"] or {}).get("rooms", [])
    for index, (storey_id, storey_name, elevation, height) in enumerate(storey_list(params)):
        storey = sl.storey(model, f"storey-{storey_id}", Name=storey_name, elevation=elevation)
        slab_key = f"slab-{index}"
        sl.create_entity(model, "IfcSlab", slab_key, storey=storey, Name=f"Floor slab {storey_name}", PredefinedType="FLOOR",
                         x=0.0, y=0.0, z=-params["slab_thickness"], width=length, depth=width, height=params["slab_thickness"],
                         psets=supplement_for(params, "IfcSlab", slab_key))
        for side, box in walls.items():
            key = f"wall-{side}-{index}"
            psets = {"Pset_WallCommon": {"FireRating": params["external_wall_fire_rating"], "IsExternal": True}}
            for name, values in supplement_for(params, "IfcWall", key).items():
                psets[name] = {**psets.get(name, {}), **values}
            if "FireRating" in psets.get("BIM_Supplement", {}):
                psets["Pset_WallCommon"]["FireRating"] = psets["BIM_Supplement"]["FireRating"]
            sl.create_entity(model, "IfcWall", key, storey=storey, Name=f"{side.title()} wall {storey_name}",
                             psets=psets, z=0.0, height=height, **box)
        for room in (r for r in rooms if r["storey"] == storey_id and r.get("outline")):
            xs, ys = [p[0] for p in room["outline"]], [p[1] for p in room["outline"]]
            key = f"space:{room['id']}"
            sl.create_entity(model, "IfcSpace", key, storey=storey, Name=room["id"], LongName=room["name"],
                             x=min(xs), y=min(ys), z=0.0, width=max(xs) - min(xs), depth=max(ys) - min(ys), height=height,
                             psets=supplement_for(params, "IfcSpace", key))
    sl.save(model, out_path)
