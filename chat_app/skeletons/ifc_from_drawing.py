"""IFC skeleton of a cad->ifc project: every keyed LINE on the wall layer of a pinned drawing version becomes a wall
whose GlobalId derives from the drawing's key ("wall:<key>"), so it stays stable while the key lives."""

import math

import ezdxf.units
import script_lib as sl

PARAMS = {
    "name": "New building",
    "source": {"model": "m_0000000000000000", "version": "v1"},
    "wall_layer": "A-WALL",
    "wall_thickness": 0.2,
    "wall_height": 3.0,
}


def drawing_key(entity):
    if not entity.has_xdata("SCRIPTLIB"):
        return None
    return entity.get_xdata("SCRIPTLIB")[0].value


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
        sl.create_entity(model, "IfcWall", f"wall:{key}", storey=storey, Name=f"Wall {key}", x=round(x, 9), y=round(y, 9),
                         rotation=round(math.degrees(angle), 9), width=length, depth=thickness, height=height,
                         psets={"ScriptLib_Source": {"sourceKey": key}})
    sl.save(model, out_path)
