"""Drawing skeleton of a cad project: one rectangular room as centreline walls on A-WALL and its label."""

import dxf_lib as dl

PARAMS = {"name": "New drawing", "length": 8.0, "width": 6.0, "wall_layer": "A-WALL"}


def build(params, out_path):
    doc = dl.new_doc(layers={params["wall_layer"]: {"color": 1}, "A-ANNO": {"color": 7}})
    corners = [(0.0, 0.0), (params["length"], 0.0), (params["length"], params["width"]), (0.0, params["width"])]
    for index, side in enumerate(("south", "east", "north", "west")):
        (x1, y1), (x2, y2) = corners[index], corners[(index + 1) % 4]
        dl.create_entity(doc, "LINE", f"wall-{side}", layer=params["wall_layer"], x1=x1, y1=y1, x2=x2, y2=y2)
    dl.create_entity(doc, "TEXT", "label-room", layer="A-ANNO", x=params["length"] / 2, y=params["width"] / 2, text=params["name"], height=0.3)
    dl.save(doc, out_path)
