"""A small single-storey house: four walls, a floor slab, a roof slab, a door and two windows."""

import script_lib as sl

PARAMS = {
    "name": "Small house",
    "length": 10.0,
    "width": 8.0,
    "wall_height": 3.0,
    "wall_thickness": 0.3,
    "fire_rating": "F30",
}


def build(params, out_path):
    model = sl.new_model(params["name"])
    ground = sl.storey(model, "storey-ground", Name="Ground floor", elevation=0.0)
    length, width = params["length"], params["width"]
    thickness = params["wall_thickness"]
    wall_pset = {"Pset_WallCommon": {"FireRating": params["fire_rating"], "IsExternal": True}}

    sl.create_entity(model, "IfcSlab", "slab-ground", storey=ground, Name="Ground slab", PredefinedType="FLOOR",
                     x=0.0, y=0.0, z=-0.2, width=length, depth=width, height=0.2)
    sl.create_entity(model, "IfcWall", "wall-south", storey=ground, Name="South wall", psets=wall_pset,
                     quantities={"Qto_WallBaseQuantities": {"Length": 10.0, "NetSideArea": 27.0}},
                     x=0.0, y=0.0, width=length, depth=thickness, height=params["wall_height"])
    sl.create_entity(model, "IfcWall", "wall-north", storey=ground, Name="North wall", psets=wall_pset,
                     x=0.0, y=width - thickness, width=length, depth=thickness, height=params["wall_height"])
    sl.create_entity(model, "IfcWall", "wall-west", storey=ground, Name="West wall", psets=wall_pset,
                     x=0.0, y=thickness, width=thickness, depth=width - 2 * thickness, height=params["wall_height"])
    sl.create_entity(model, "IfcWall", "wall-east", storey=ground, Name="East wall", psets=wall_pset,
                     x=length - thickness, y=thickness, width=thickness, depth=width - 2 * thickness, height=params["wall_height"])
    sl.create_entity(model, "IfcSlab", "slab-roof", storey=ground, Name="Roof slab", PredefinedType="ROOF",
                     x=0.0, y=0.0, z=params["wall_height"], width=length, depth=width, height=0.25)
    sl.create_entity(model, "IfcDoor", "door-entrance", storey=ground, Name="Entrance door",
                     x=2.0, y=-0.05, width=1.0, depth=0.1, height=2.1,
                     psets={"Pset_DoorCommon": {"FireRating": "EI30", "IsExternal": True}})
    for index, offset in enumerate((5.0, 7.5)):
        sl.create_entity(model, "IfcWindow", f"window-south-{index + 1}", storey=ground,
                         Name=f"South window {index + 1}", x=offset, y=-0.05, z=1.0,
                         width=1.2, depth=0.1, height=1.2)
    sl.save(model, out_path)
