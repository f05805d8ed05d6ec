"""dxf_lib: the contract factory for drawing build scripts (runs inside the sandbox), the DXF twin of script_lib.

A drawing script holds a literal PARAMS dict and build(params, out_path) and creates every keyed entity with
create_entity(doc, type, key, ...). The key is stored in the entity's XDATA under the registered APPID SCRIPTLIB
and is the entity's id (render.json key, diff guid, locate). Geometry goes in scalar keyword arguments, so an
edit-call can rewrite one of them:

    LINE x1 y1 x2 y2 | CIRCLE cx cy r | ARC cx cy r start_angle end_angle | POINT x y
    TEXT x y text height rotation | MTEXT x y text height width rotation | LWPOLYLINE points closed (not rewritable)
    INSERT block x y rotation sx sy          common: layer color linetype, props={name: value}

    import dxf_lib as dl

    PARAMS = {"length": 10.0, "width": 8.0}

    def build(params, out_path):
        doc = dl.new_doc(layers={"A-WALL": {"color": 1}})
        dl.create_entity(doc, "LINE", "wall-south", layer="A-WALL", x1=0, y1=0, x2=params["length"], y2=0)
        dl.save(doc, out_path)
"""

from __future__ import annotations

import ezdxf
from ezdxf import units

import callsites

APPID = "SCRIPTLIB"
MAX_KEY_BYTES = 255
ENTITY_TYPES = ("LINE", "CIRCLE", "ARC", "POINT", "TEXT", "MTEXT", "LWPOLYLINE", "INSERT")


class ScriptError(Exception):
    pass


def new_doc(*, units_name: str = "m", layers: dict[str, dict] | None = None):
    """A DXF R2018 document in metres (or `units_name`: mm, cm, m), with the APPID registered and the given layers."""
    unit = {"mm": units.MM, "cm": units.CM, "m": units.M}.get(units_name)
    if unit is None:
        raise ScriptError(f"unknown units {units_name!r}: use mm, cm or m")
    doc = ezdxf.new("R2018", setup=True, units=unit)
    doc.appids.add(APPID)
    for name, style in (layers or {}).items():
        doc.layers.add(name, color=int(style.get("color", 7)), linetype=style.get("linetype", "Continuous"))
    return doc


def add_block(doc, name: str):
    """A block definition to draw into with ezdxf's layout API (its content is not keyed; INSERTs of it are)."""
    return doc.blocks.new(name=name)


def _attributes(layer: str, color: int | None, linetype: str | None) -> dict:
    attributes = {"layer": layer}
    if color is not None:
        attributes["color"] = int(color)
    if linetype is not None:
        attributes["linetype"] = linetype
    return attributes


def _add(msp, dxftype: str, attributes: dict, geometry: dict):
    g = {name: value for name, value in geometry.items() if value is not None}
    try:
        if dxftype == "LINE":
            return msp.add_line((g["x1"], g["y1"]), (g["x2"], g["y2"]), dxfattribs=attributes)
        if dxftype == "CIRCLE":
            return msp.add_circle((g["cx"], g["cy"]), g["r"], dxfattribs=attributes)
        if dxftype == "ARC":
            return msp.add_arc((g["cx"], g["cy"]), g["r"], g["start_angle"], g["end_angle"], dxfattribs=attributes)
        if dxftype == "POINT":
            return msp.add_point((g["x"], g["y"]), dxfattribs=attributes)
        if dxftype == "TEXT":
            text = msp.add_text(str(g["text"]), height=g.get("height", 0.25), rotation=g.get("rotation", 0.0), dxfattribs=attributes)
            return text.set_placement((g["x"], g["y"]))
        if dxftype == "MTEXT":
            mtext = msp.add_mtext(str(g["text"]), dxfattribs={**attributes, "char_height": g.get("height", 0.25), "width": g.get("width", 0.0),
                                                                  "rotation": g.get("rotation", 0.0), "insert": (g["x"], g["y"])})
            return mtext
        if dxftype == "LWPOLYLINE":
            points = [tuple(float(v) for v in point) for point in g["points"]]
            return msp.add_lwpolyline(points, format="xyb" if any(len(p) == 3 for p in points) else "xy", close=bool(g.get("closed", False)), dxfattribs=attributes)
        if dxftype == "INSERT":
            return msp.add_blockref(g["block"], (g["x"], g["y"]), dxfattribs={
                **attributes, "rotation": g.get("rotation", 0.0), "xscale": g.get("sx", 1.0), "yscale": g.get("sy", 1.0)})
    except KeyError as missing:
        raise ScriptError(f"{dxftype} needs the argument {missing.args[0]}") from None
    raise ScriptError(f"unsupported entity type {dxftype!r}: use one of {', '.join(ENTITY_TYPES)}")


def create_entity(doc, dxftype: str, key: str, *, layer: str = "0", color: int | None = None, linetype: str | None = None,
                  props: dict | None = None, **geometry):
    """One keyed modelspace entity; the key goes into XDATA (APPID SCRIPTLIB), props after it as name/value pairs."""
    if not isinstance(key, str) or not key:
        raise ScriptError("create_entity needs a non-empty string key")
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise ScriptError(f"design key {key[:40]!r}... is longer than {MAX_KEY_BYTES} bytes")
    if callsites.seen(key):
        raise ScriptError(f"design key {key!r} is used twice")
    dxftype = str(dxftype).upper()
    if dxftype == "INSERT" and geometry.get("block") not in doc.blocks:
        raise ScriptError(f"INSERT {key!r}: block {geometry.get('block')!r} is not defined (dl.add_block first)")
    if layer not in doc.layers:
        doc.layers.add(layer)
    callsites.record(key)
    entity = _add(doc.modelspace(), dxftype, _attributes(layer, color, linetype), geometry)
    xdata = [(1000, key)]
    for name, value in (props or {}).items():
        xdata += [(1000, str(name)), (1000, str(value))]
    entity.set_xdata(APPID, xdata)
    return entity


def save(doc, out_path: str) -> None:
    doc.saveas(out_path)
