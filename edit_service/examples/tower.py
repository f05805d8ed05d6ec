"""A parametric multi-storey tower: per storey a floor slab, perimeter walls split into bays, a door per bay on the
ground floor and windows on the upper floors, with property sets. PARAMS scale it from tens to tens of thousands of
elements (elements = storeys * (1 + bays_x*2 + bays_y*2) + windows/doors)."""

import script_lib as sl

PARAMS = {
    "name": "Tower",
    "storeys": 3,
    "bays_x": 2,
    "bays_y": 2,
    "bay_width": 6.0,
    "storey_height": 3.5,
    "wall_thickness": 0.25,
    "facade_material": "Concrete",
    "lobby_name": "Lobby door",
}


def build(params, out_path):
    model = sl.new_model(params["name"])
    bay, storey_height, thickness = params["bay_width"], params["storey_height"], params["wall_thickness"]
    size_x, size_y = params["bays_x"] * bay, params["bays_y"] * bay
    wall_pset = {"Pset_WallCommon": {"IsExternal": True, "LoadBearing": True}, "Tower_Facade": {"Material": params["facade_material"]}}

    sl.create_entity(model, "IfcDoor", "door-lobby", storey=None, Name=params["lobby_name"],
                     x=bay / 2, y=-0.05, width=1.8, depth=0.1, height=2.4)
    for level in range(params["storeys"]):
        floor = sl.storey(model, f"storey-{level}", Name=f"Level {level}", elevation=level * storey_height)
        sl.create_entity(model, "IfcSlab", f"slab-{level}", storey=floor, Name=f"Floor {level}", PredefinedType="FLOOR",
                         x=0.0, y=0.0, z=-0.3, width=size_x, depth=size_y, height=0.3,
                         psets={"Pset_SlabCommon": {"IsExternal": False, "LoadBearing": True}})
        for side, along_x, count in (("south", True, params["bays_x"]), ("north", True, params["bays_x"]),
                                     ("west", False, params["bays_y"]), ("east", False, params["bays_y"])):
            for index in range(count):
                x = index * bay if along_x else (0.0 if side == "west" else size_x - thickness)
                y = index * bay if not along_x else (0.0 if side == "south" else size_y - thickness)
                sl.create_entity(model, "IfcWall", f"wall-{level}-{side}-{index}", storey=floor,
                                 Name=f"Wall {side} {index} L{level}", psets=wall_pset,
                                 x=x, y=y, width=bay if along_x else thickness, depth=thickness if along_x else bay,
                                 height=storey_height - 0.3)
                if level > 0:
                    sl.create_entity(model, "IfcWindow", f"window-{level}-{side}-{index}", storey=floor,
                                     Name=f"Window {side} {index} L{level}",
                                     x=x + (bay / 2 - 0.75 if along_x else 0.0), y=y + (0.0 if along_x else bay / 2 - 0.75),
                                     z=1.0, width=1.5 if along_x else thickness, depth=thickness if along_x else 1.5,
                                     height=1.4, psets={"Pset_WindowCommon": {"IsExternal": True}})
    sl.save(model, out_path)
