"""Sandbox entry point: validates a DXF and sends back its semantic snapshot and its 2D preview (render.json).

    python inspect_dxf.py DXF [--no-validate] --outputs-fd N

Validation (script output): ezdxf reads it, the audit finds no error, the APPID is registered and keys are unique;
exit 3 with the messages on stderr otherwise. Foreign files (--no-validate: uploads) are read with ezdxf's recover
mode, which tolerates damaged files. The snapshot maps each entity's key (XDATA of APPID SCRIPTLIB; keyless ones:
"dxf-handle:<handle>") to {"class", "name", "attributes"}, geometry included: in a drawing, geometry is the content.
render.json: schemaVersion 2, see the spec and README (render.json).
"""

import json
import logging
import math
import sys

import ezdxf
from ezdxf import bbox, disassemble, recover
from ezdxf.math import Vec3

from outputs import end_with_the_reader, send

APPID = "SCRIPTLIB"
SNAPSHOT = "snapshot.json"
RENDER = "render.json"
SCHEMA_VERSION = 2
MAX_UNSUPPORTED_VERTICES = 256
RENDERED = ("LINE", "ARC", "CIRCLE", "POINT", "TEXT", "MTEXT", "ATTRIB")


def number(value) -> float:
    rounded = round(float(value), 9)
    return 0.0 if rounded == 0 else rounded


def xy(point) -> list[float]:
    return [number(point[0]), number(point[1])]


def angle(value: float) -> float:
    return number(value % 360.0)


def key_and_props(entity) -> tuple[str | None, dict]:
    if not entity.has_xdata(APPID):
        return None, {}
    values = [tag.value for tag in entity.get_xdata(APPID) if tag.code == 1000]
    if not values:
        return None, {}
    props = dict(zip(values[1::2], values[2::2]))
    return str(values[0]), props


def geometry(entity) -> dict | None:
    """The render.json geometry fields of a whitelisted entity, in WCS; None for anything else."""
    kind = entity.dxftype()
    if kind == "LINE":
        return {"start": xy(entity.dxf.start), "end": xy(entity.dxf.end)}
    if kind in ("ARC", "CIRCLE"):
        center = entity.ocs().to_wcs(entity.dxf.center)
        fields = {"center": xy(center), "radius": number(entity.dxf.radius)}
        if kind == "ARC":
            start, end = entity.start_point, entity.end_point
            if entity.dxf.extrusion.z < 0:  # mirrored: WCS runs the other way round
                start, end = end, start
            fields["startAngle"] = angle(math.degrees(math.atan2(start.y - center.y, start.x - center.x)))
            fields["endAngle"] = angle(math.degrees(math.atan2(end.y - center.y, end.x - center.x)))
        return fields
    if kind == "POINT":
        return {"position": xy(entity.dxf.location)}
    if kind in ("TEXT", "ATTRIB"):
        placement = entity.get_placement()
        return {"position": xy(entity.ocs().to_wcs(placement[1])), "text": entity.plain_text(), "height": number(entity.dxf.height),
                "rotation": angle(entity.dxf.rotation), "align": placement[0].name}
    if kind == "MTEXT":
        return {"position": xy(entity.dxf.insert), "text": entity.plain_text(), "height": number(entity.dxf.char_height),
                "width": number(entity.dxf.get("width", 0.0)), "rotation": angle(entity.get_rotation()), "attachment": int(entity.dxf.attachment_point)}
    return None


def exploded(entity):
    """LWPOLYLINE and 2D/3D POLYLINE (not meshes) as their LINE and ARC segments."""
    return list(entity.virtual_entities())


def is_polyline(entity) -> bool:
    kind = entity.dxftype()
    return kind == "LWPOLYLINE" or (kind == "POLYLINE" and not (entity.is_poly_face_mesh or entity.is_polygon_mesh))


def unsupported(entity, handle: str) -> dict:
    coords = []
    try:
        for primitive in disassemble.to_primitives(disassemble.recursive_decompose([entity])):
            for vertex in primitive.vertices():
                coords.append(xy(vertex))
                if len(coords) >= MAX_UNSUPPORTED_VERTICES:
                    break
            if len(coords) >= MAX_UNSUPPORTED_VERTICES:
                break
    except Exception:  # noqa: BLE001 - an entity ezdxf cannot decompose still gets listed
        coords = []
    return {"type": entity.dxftype(), "handle": handle, "coords": coords}


def entry(key, entity, layer: str, handle: str | None, fields: dict, **extra) -> dict:
    identity = {"handle": handle} if handle else {}
    return {"key": key, "type": entity.dxftype(), "layer": layer, **identity, **fields, **extra}


def render(doc) -> dict:
    entities, skipped, emitted = [], [], []

    def emit(key, source, layer, handle, **extra):
        fields = geometry(source)
        if fields is None:
            return False
        entities.append(entry(key, source, layer, handle, fields, **extra))
        emitted.append(source)
        return True

    for entity in doc.modelspace().entities_in_redraw_order():
        key, _ = key_and_props(entity)
        layer, handle = entity.dxf.layer, entity.dxf.handle
        if is_polyline(entity):
            for segment in exploded(entity):
                emit(key, segment, layer, handle)
        elif entity.dxftype() == "INSERT":
            entities.append({"key": key, "type": "INSERT", "layer": layer, "handle": handle, "block": entity.dxf.name,
                             "position": xy(entity.dxf.insert), "rotation": angle(entity.dxf.rotation),
                             "scale": [number(entity.dxf.xscale), number(entity.dxf.yscale)]})
            children = list(entity.virtual_entities()) + [attrib for attrib in entity.attribs if not attrib.is_invisible]
            for child in children:
                child_layer = layer if child.dxf.layer == "0" else child.dxf.layer
                if child.dxftype() == "INSERT":
                    skipped.append(unsupported(child, handle))  # one level only
                elif is_polyline(child):
                    for segment in exploded(child):
                        emit(None, segment, child_layer, None, parent=handle)
                elif not emit(None, child, child_layer, None, parent=handle):
                    skipped.append(unsupported(child, handle))
        elif not emit(key, entity, layer, handle):
            skipped.append(unsupported(entity, handle))
    box = bbox.extents(emitted, fast=True)
    points = [] if not box.has_data else [box.extmin, box.extmax]
    points += [Vec3(x, y, 0) for item in skipped for x, y in item["coords"]]
    bounds = None
    if points and all(math.isfinite(v) for p in points for v in (p.x, p.y)):
        bounds = {"min": xy((min(p.x for p in points), min(p.y for p in points))), "max": xy((max(p.x for p in points), max(p.y for p in points)))}
    layers = [{"name": layer.dxf.name, "color": layer.color, "linetype": layer.dxf.linetype} for layer in doc.layers]
    return {"schemaVersion": SCHEMA_VERSION, "bounds": bounds, "layers": layers, "entities": entities, "unsupported": skipped}


def snapshot(doc) -> dict:
    elements = {}
    for entity in doc.modelspace():
        key, props = key_and_props(entity)
        ident = key or f"dxf-handle:{entity.dxf.handle}"
        attributes = {"layer": entity.dxf.layer, "color": int(entity.dxf.get("color", 256)), "linetype": entity.dxf.get("linetype", "BYLAYER")}
        fields = geometry(entity)
        if fields is None and is_polyline(entity) and entity.dxftype() == "LWPOLYLINE":
            fields = {"points": [[number(x), number(y), number(b)] for x, y, _s, _e, b in entity.get_points()], "closed": bool(entity.closed)}
        elif fields is None and entity.dxftype() == "POLYLINE" and is_polyline(entity):
            fields = {"points": [xy(point) for point in entity.points()], "closed": bool(entity.is_closed)}
        elif fields is None and entity.dxftype() == "INSERT":
            fields = {"block": entity.dxf.name, "position": xy(entity.dxf.insert), "rotation": angle(entity.dxf.rotation),
                      "scale": [number(entity.dxf.xscale), number(entity.dxf.yscale)]}
        elif fields is None:  # outside the whitelist: its outline, so a change still shows in a diff
            fields = {"outline": unsupported(entity, entity.dxf.handle)["coords"]}
        for name, value in (fields or {}).items():
            attributes[name] = json.dumps(value) if isinstance(value, list) else value
        for name, value in props.items():
            attributes[f"Props.{name}"] = value
        text = fields.get("text", "") if fields else ""
        elements[ident] = {"class": entity.dxftype(), "name": text, "attributes": attributes}
    return elements


def problems(doc, auditor) -> list[str]:
    found = [f"DXF audit: {error.message}" for error in auditor.errors]
    if APPID not in doc.appids:
        found.append(f"APPID {APPID} is not registered")
    keys = [key_and_props(entity)[0] for entity in doc.modelspace()]
    duplicates = sorted({key for key in keys if key and keys.count(key) > 1})
    found += [f"key {key!r} is used by more than one entity" for key in duplicates]
    return found


def main(path: str, validate: bool, outputs_fd: int) -> int:
    if validate:
        try:
            doc = ezdxf.readfile(path)
        except (IOError, ezdxf.DXFStructureError) as exc:
            print(f"DXF validation: the file cannot be read: {exc}", file=sys.stderr)
            return 3
        found = problems(doc, doc.audit())
        if found:
            for message in found[:20]:
                print(message, file=sys.stderr)
            return 3
    else:
        try:
            doc, _auditor = recover.readfile(path)
        except (IOError, ezdxf.DXFStructureError) as exc:
            print(f"not a readable DXF file: {exc}", file=sys.stderr)
            return 3
    with open(SNAPSHOT, "w", encoding="utf-8") as handle:
        json.dump(snapshot(doc), handle, separators=(",", ":"))
    with open(RENDER, "w", encoding="utf-8") as handle:
        json.dump(render(doc), handle, separators=(",", ":"), ensure_ascii=False)
    send(outputs_fd, [SNAPSHOT, RENDER])
    return 0


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)
    arguments = sys.argv[1:]
    fd = int(arguments[arguments.index("--outputs-fd") + 1])
    end_with_the_reader(fd)
    sys.exit(main(arguments[0], "--no-validate" not in arguments, fd))
