"""A small floor plan drawn with dxf_lib: centreline walls on A-WALL, a door block, room labels and an outline."""

import dxf_lib as dl

PARAMS = {"length": 10.0, "width": 8.0, "partition_x": 6.0, "door_width": 0.9, "wall_layer": "A-WALL"}


def build(params, out_path):
    doc = dl.new_doc(layers={"A-WALL": {"color": 1}, "A-DOOR": {"color": 3}, "A-AREA": {"color": 5}, "A-ANNO": {"color": 7}})
    door = dl.add_block(doc, "DOOR90")
    door.add_line((0, 0), (params["door_width"], 0))
    door.add_arc((0, 0), params["door_width"], 0, 90)
    length, width, wall = params["length"], params["width"], params["wall_layer"]
    dl.create_entity(doc, "LINE", "wall-south", layer=wall, x1=0.0, y1=0.0, x2=length, y2=0.0, props={"FireRating": "EI60"})
    dl.create_entity(doc, "LINE", "wall-east", layer=wall, x1=length, y1=0.0, x2=length, y2=width)
    dl.create_entity(doc, "LINE", "wall-north", layer=wall, x1=length, y1=width, x2=0.0, y2=width)
    dl.create_entity(doc, "LINE", "wall-west", layer=wall, x1=0.0, y1=width, x2=0.0, y2=0.0)
    dl.create_entity(doc, "LINE", "wall-partition", layer=wall, x1=params["partition_x"], y1=0.0, x2=params["partition_x"], y2=width)
    dl.create_entity(doc, "INSERT", "door-1", layer="A-DOOR", block="DOOR90", x=2.0, y=0.0, rotation=0.0)
    dl.create_entity(doc, "LWPOLYLINE", "room-living", layer="A-AREA", points=[[0, 0], [6, 0], [6, 8], [0, 8]], closed=True)
    dl.create_entity(doc, "TEXT", "label-living", layer="A-ANNO", x=3.0, y=4.0, text="Living", height=0.3)
    dl.create_entity(doc, "TEXT", "label-bedroom", layer="A-ANNO", x=8.0, y=4.0, text="Bedroom", height=0.3)
    dl.save(doc, out_path)
