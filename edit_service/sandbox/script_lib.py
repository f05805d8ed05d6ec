"""script_lib: the contract factory for build scripts (runs inside the sandbox).

A build script holds a literal PARAMS dict and build(params, out_path). It creates elements with create_entity(),
whose GlobalId is derived from a key (uuid5 -> IFC base64) and whose key is written as designKey into the
project-specific property set DESIGN_PSET. Everything else that is created (property sets, relationships,
placements) gets a GlobalId derived from what it connects, so the same script and params give the same IFC,
byte-identical apart from the header timestamp.

    import script_lib as sl

    PARAMS = {"name": "House", "wall_height": 3.0}

    def build(params, out_path):
        model = sl.new_model(params["name"])
        storey = sl.storey(model, "ground", Name="Ground floor")
        sl.create_entity(model, "IfcWall", "wall-north", storey=storey, Name="North wall",
                         x=0, y=0, width=10, depth=0.3, height=params["wall_height"])
        sl.save(model, out_path)
"""

from __future__ import annotations

import math
import os
import uuid

import ifcopenshell
import ifcopenshell.guid

try:
    import callsites
except ImportError:  # imported on the host as edit_service.sandbox.script_lib (for guid_for)
    from edit_service.sandbox import callsites

DESIGN_PSET = "ScriptLib_Design"
NAMESPACE = uuid.UUID("5a1e7c3e-2b9f-4d0a-9c1e-6f3b8d2a7e41")
GEOMETRY_ARGUMENTS = ("x", "y", "z", "width", "depth", "height")



def guid_for(key: str) -> str:
    return ifcopenshell.guid.compress(uuid.uuid5(NAMESPACE, key).hex)


class ScriptError(Exception):
    pass


# --- model skeleton ------------------------------------------------------------------------------------------


def new_model(name: str = "Project", schema: str = "IFC4"):
    """A file with project, units, geometric context, site and building, all with stable GlobalIds."""
    model = ifcopenshell.file(schema=schema)
    units = model.create_entity(
        "IfcUnitAssignment",
        Units=[
            model.create_entity("IfcSIUnit", UnitType="LENGTHUNIT", Name="METRE"),
            model.create_entity("IfcSIUnit", UnitType="AREAUNIT", Name="SQUARE_METRE"),
            model.create_entity("IfcSIUnit", UnitType="VOLUMEUNIT", Name="CUBIC_METRE"),
            model.create_entity("IfcSIUnit", UnitType="PLANEANGLEUNIT", Name="RADIAN"),
        ],
    )
    origin = _axis(model, 0.0, 0.0, 0.0)
    context = model.create_entity(
        "IfcGeometricRepresentationContext", ContextType="Model", CoordinateSpaceDimension=3, Precision=1e-5,
        WorldCoordinateSystem=origin,
    )
    model.create_entity(
        "IfcGeometricRepresentationSubContext", ContextIdentifier="Body", ContextType="Model",
        ParentContext=context, TargetView="MODEL_VIEW",
    )
    project = model.create_entity(
        "IfcProject", GlobalId=guid_for("project"), Name=name, UnitsInContext=units, RepresentationContexts=[context]
    )
    site = model.create_entity("IfcSite", GlobalId=guid_for("site"), Name="Site", ObjectPlacement=_placement(model))
    building = model.create_entity(
        "IfcBuilding", GlobalId=guid_for("building"), Name=name, ObjectPlacement=_placement(model, relative_to=site)
    )
    _aggregate(model, project, [site])
    _aggregate(model, site, [building])
    return model


def _single(model, ifc_class: str):
    found = model.by_type(ifc_class)
    if not found:
        raise ScriptError(f"the model has no {ifc_class}; create it with new_model()")
    return found[0]


def storey(model, key: str, *, elevation: float = 0.0, **attributes):
    """A building storey (a spatial element; not part of the script map)."""
    building = _single(model, "IfcBuilding")
    element = model.create_entity(
        "IfcBuildingStorey", GlobalId=guid_for(key), Elevation=float(elevation),
        ObjectPlacement=_placement(model, z=float(elevation), relative_to=building), **attributes,
    )
    _aggregate(model, building, [element])
    return element


# --- the contract factory --------------------------------------------------------------------------------------


def create_entity(
    model,
    ifc_class: str,
    key: str,
    *,
    storey=None,
    x: float = 0.0,
    y: float = 0.0,
    z: float = 0.0,
    rotation: float = 0.0,
    width: float | None = None,
    depth: float | None = None,
    height: float | None = None,
    psets: dict[str, dict] | None = None,
    quantities: dict[str, dict] | None = None,
    **attributes,
):
    """An element with GlobalId from `key`, designKey in DESIGN_PSET, optional box geometry (width x depth x height
    at x, y, z relative to the storey, turned `rotation` degrees about Z), property sets, quantity sets ({"Qto_...": {"Length": 3.0}}; the quantity
    kind follows the name: ...Area, ...Volume, ...Weight, ...Count, else a length) and containment in `storey`."""
    if not isinstance(key, str) or not key:
        raise ScriptError("create_entity needs a non-empty string key")
    if callsites.seen(key):
        raise ScriptError(f"design key {key!r} is used twice")
    callsites.record(key)
    relative_to = storey or _single(model, "IfcBuilding")
    element = model.create_entity(
        ifc_class, GlobalId=guid_for(key), ObjectPlacement=_placement(model, x, y, z, relative_to=relative_to, rotation=rotation), **attributes
    )
    if None not in (width, depth, height):
        element.Representation = _box(model, float(width), float(depth), float(height))
    if storey is not None:
        _contain(model, storey, element)
    _add_pset(model, element, DESIGN_PSET, {"designKey": key})
    for name, properties in (psets or {}).items():
        _add_pset(model, element, name, properties)
    for name, values in (quantities or {}).items():
        _add_quantities(model, element, name, values)
    return element


def save(model, out_path: str) -> None:
    """Writes the IFC. Relationship GlobalIds were derived from what they connect (see _rel_guid)."""
    model.write(out_path)


# --- deterministic helpers -------------------------------------------------------------------------------------


def _rel_guid(kind: str, *parts: str) -> str:
    return guid_for(f"{kind}:" + ":".join(parts))


def _aggregate(model, whole, parts):
    for part in parts:
        _grow_relationship(model, "IfcRelAggregates", "RelatingObject", "RelatedObjects", whole, part)


def _contain(model, structure, element):
    _grow_relationship(model, "IfcRelContainedInSpatialStructure", "RelatingStructure", "RelatedElements", structure, element)


# (id(model), relationship class, relating GlobalId) -> relationship: one relationship per relating object,
# grown as parts are added, with a GlobalId derived from the relating object
_relationships: dict = {}


def _grow_relationship(model, ifc_class: str, relating_attr: str, related_attr: str, relating, related) -> None:
    slot = (id(model), ifc_class, relating.GlobalId)
    rel = _relationships.get(slot)
    if rel is None:
        _relationships[slot] = model.create_entity(
            ifc_class, GlobalId=_rel_guid(ifc_class, relating.GlobalId), **{relating_attr: relating, related_attr: [related]}
        )
    else:
        setattr(rel, related_attr, [*getattr(rel, related_attr), related])


def _ifc_value(model, value):
    if isinstance(value, bool):
        return model.create_entity("IfcBoolean", value)
    if isinstance(value, int):
        return model.create_entity("IfcInteger", value)
    if isinstance(value, float):
        return model.create_entity("IfcReal", value)
    if isinstance(value, str):
        return model.create_entity("IfcLabel", value)
    raise ScriptError(f"property values must be bool, int, float or str, got {type(value).__name__}")


def _add_pset(model, element, name: str, properties: dict) -> None:
    props = [
        model.create_entity("IfcPropertySingleValue", Name=prop, NominalValue=_ifc_value(model, value))
        for prop, value in properties.items()
    ]
    pset = model.create_entity(
        "IfcPropertySet", GlobalId=_rel_guid("pset", element.GlobalId, name), Name=name, HasProperties=props
    )
    model.create_entity(
        "IfcRelDefinesByProperties", GlobalId=_rel_guid("defines", element.GlobalId, name),
        RelatedObjects=[element], RelatingPropertyDefinition=pset,
    )


QUANTITY_KINDS = (("Area", "IfcQuantityArea", "AreaValue"), ("Volume", "IfcQuantityVolume", "VolumeValue"),
                  ("Weight", "IfcQuantityWeight", "WeightValue"), ("Count", "IfcQuantityCount", "CountValue"))


def _quantity(model, name: str, value):
    for suffix, ifc_class, attribute in QUANTITY_KINDS:
        if name.endswith(suffix):
            return model.create_entity(ifc_class, Name=name, **{attribute: value})
    return model.create_entity("IfcQuantityLength", Name=name, LengthValue=float(value))


def _add_quantities(model, element, name: str, values: dict) -> None:
    quantity_set = model.create_entity(
        "IfcElementQuantity", GlobalId=_rel_guid("qto", element.GlobalId, name), Name=name,
        Quantities=[_quantity(model, quantity, value) for quantity, value in values.items()],
    )
    model.create_entity(
        "IfcRelDefinesByProperties", GlobalId=_rel_guid("defines", element.GlobalId, name),
        RelatedObjects=[element], RelatingPropertyDefinition=quantity_set,
    )


def _axis(model, x: float, y: float, z: float, rotation: float = 0.0):
    """A placement at (x, y, z), turned `rotation` degrees about Z (RefDirection; no attribute when 0)."""
    location = model.create_entity("IfcCartesianPoint", (x, y, z))
    if not rotation:
        return model.create_entity("IfcAxis2Placement3D", Location=location)
    radians = math.radians(rotation)
    return model.create_entity(
        "IfcAxis2Placement3D", Location=location, Axis=model.create_entity("IfcDirection", (0.0, 0.0, 1.0)),
        RefDirection=model.create_entity("IfcDirection", (round(math.cos(radians), 12), round(math.sin(radians), 12), 0.0)),
    )


def _placement(model, x: float = 0.0, y: float = 0.0, z: float = 0.0, relative_to=None, rotation: float = 0.0):
    return model.create_entity(
        "IfcLocalPlacement",
        PlacementRelTo=relative_to.ObjectPlacement if relative_to is not None else None,
        RelativePlacement=_axis(model, float(x), float(y), float(z), float(rotation)),
    )


def _box(model, width: float, depth: float, height: float):
    body = next(c for c in model.by_type("IfcGeometricRepresentationSubContext") if c.ContextIdentifier == "Body")
    profile = model.create_entity(
        "IfcRectangleProfileDef", ProfileType="AREA", XDim=width, YDim=depth,
        Position=model.create_entity("IfcAxis2Placement2D", Location=model.create_entity("IfcCartesianPoint", (width / 2, depth / 2))),
    )
    solid = model.create_entity(
        "IfcExtrudedAreaSolid", SweptArea=profile, Position=_axis(model, 0.0, 0.0, 0.0),
        ExtrudedDirection=model.create_entity("IfcDirection", (0.0, 0.0, 1.0)), Depth=height,
    )
    shape = model.create_entity(
        "IfcShapeRepresentation", ContextOfItems=body, RepresentationIdentifier="Body", RepresentationType="SweptSolid",
        Items=[solid],
    )
    return model.create_entity("IfcProductDefinitionShape", Representations=[shape])


# --- inputs ----------------------------------------------------------------------------------------------------

INPUT_DIR = "/sandbox/in"


def dxf_input(name: str = "source"):
    """The drawing a cad->ifc script reads: the DXF version pinned in PARAMS[name] = {"model", "version"}, bound
    read-only by the edit service as <name>.dxf. Returns an ezdxf document."""
    import ezdxf

    try:
        return ezdxf.readfile(os.path.join(INPUT_DIR, f"{name}.dxf"))
    except FileNotFoundError:
        raise ScriptError(f'no input drawing {name!r}: PARAMS[{name!r}] must be {{"model": "m_...", "version": "v<n>"}}') from None
