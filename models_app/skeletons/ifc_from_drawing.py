"""IFC skeleton of a cad->ifc project: every keyed LINE on the wall layer of a pinned drawing version becomes a wall
whose GlobalId derives from the drawing's key ("wall:<key>"), so it stays stable while the key lives. A delivery
(plans_app) pins the drawing it just built and fills PARAMS["plan"] (each room with an outline becomes an IfcSpace,
key space:<id>) and PARAMS["bimSupplement"] (properties by IFC class and by design key)."""

import math

import ezdxf.units
import script_lib as sl

PARAMS = {
    "name": "New building",
    "source": {"model": "m_0000000000000000", "version": "v1"},
    "wall_layer": "A-WALL",
    "wall_thickness": 0.2,
    "wall_height": 3.0,
    "plan": None,
    "bimSupplement": None,
}
SUPPLEMENT_FIELDS = ("Classification", "FireRating", "Comments")


def drawing_key(entity):
    if not entity.has_xdata("SCRIPTLIB"):
        return None
    return entity.get_xdata("SCRIPTLIB")[0].value


def supplement_for(params, ifc_class, key):
    """Properties of the BIM supplement for one element: its class's, then its own (an element beats its type)."""
    supplement = params["bimSupplement"] or {}
    values = {**supplement.get("elementTypes", {}).get(ifc_class, {}), **supplement.get("elements", {}).get(key, {})}
    psets = dict(values.pop("psets", {}))
    fields = {name: values[name] for name in SUPPLEMENT_FIELDS if name in values}
    if fields:
        psets["BIM_Supplement"] = fields
    return psets


def build(params, out_path):
    plan = sl.dxf_input("source")
    scale = ezdxf.units.conversion_factor(plan.units, ezdxf.units.M) if plan.units else 1.0
    model = sl.new_model(params["name"])
    storey = sl.storey(model, "ground", Name="Ground floor")
    thickness, height = params["wall_thickness"], params["wall_height"]
    for line in plan.modelspace().query(f'LINE[layer=="{params["wall_layer"]}"]'):
        key = drawing_key(line)
        x1, y1, x2, y2 = (value * scale for value in (line.dxf.start.x, line.dxf.start.y, line.dxf.end.x, line.dxf.end.y))
        length = math.hypot(x2 - x1, y2 - y1)
        if key is None or length == 0:
            continue
        angle = math.atan2(y2 - y1, x2 - x1)
        # the box's local y runs across the wall: shift the origin half a thickness so the wall centres on the line
        x, y = x1 + math.sin(angle) * thickness / 2, y1 - math.cos(angle) * thickness / 2
        psets = {"ScriptLib_Source": {"sourceKey": key}, **supplement_for(params, "IfcWall", f"wall:{key}")}
        sl.create_entity(model, "IfcWall", f"wall:{key}", storey=storey, Name=f"Wall {key}", x=round(x, 9), y=round(y, 9),
                         rotation=round(math.degrees(angle), 9), width=length, depth=thickness, height=height, psets=psets)
    for room in (r for r in (params["plan"] or {}).get("rooms", []) if r.get("outline")):
        xs, ys = [p[0] for p in room["outline"]], [p[1] for p in room["outline"]]
        key = f"space:{room['id']}"
        sl.create_entity(model, "IfcSpace", key, storey=storey, Name=room["id"], LongName=room["name"], x=min(xs), y=min(ys), z=0.0,
                         width=max(xs) - min(xs), depth=max(ys) - min(ys), height=height, psets=supplement_for(params, "IfcSpace", key))
    sl.save(model, out_path)
