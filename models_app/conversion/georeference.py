"""Where an IFC model lies on the map: the transformation from the model's IFC world frame (metres, as ifcopenshell
meshes it) to its projected map frame (metres). Django-free and pure (the conversion writes its answer as
georeference.json beside the XKT; the federation reads that file, or calls this on model.ifc for models converted
before the file existed).

Sources, first match wins:
- "map-conversion": an IfcMapConversion (IfcMapConversionScaled, or an IfcRigidOperation with length coordinates)
  of the 3D model context (IFC4, IFC4X3), its IfcProjectedCRS naming the map unit.
- "epset-map-conversion": IFC2X3's ePSet_MapConversion / ePSet_ProjectedCRS on IfcProject (the buildingSMART
  georeferencing guide's level 50 for IFC2X3); also read when an IFC4 file carries them and no IfcMapConversion.
- "site": no map conversion but an IfcSite: identity (the IFC world coordinates already include the site's
  placement, the only placement the model gives).
- "none": no site either: identity.

The map conversion, in the map unit, is map = E + R(theta) . diag(Scale_x, Scale_y, Scale_z) . p, p in the project's
length unit relative to the context's WorldCoordinateSystem, theta = atan2(XAxisOrdinate, XAxisAbscissa),
Scale_x = Scale (x FactorX), Scale_y = ScaleY or Scale (x FactorY), Scale_z = ScaleZ or Scale (x FactorZ); the
answer folds both units in (project unit -> metres on input, map unit -> metres on output). Eastings, Northings and
OrthogonalHeight are in the map unit (IfcProjectedCRS.MapUnit, else the project's length unit). Scale should
include the unit conversion (0.001 for a millimetre project on a metre map), and exporters get this wrong both ways,
so the reading that keeps the model's size on the map (a geodetic scale factor is within a few per mille of 1; a
unit slip is a power of ten) wins:
- a map unit is given and the scale as written would make the model 10x or more too big or too small while the
  scale alone would not: the scale is the geodetic factor only and the units convert by themselves (Scale 1 on a
  millimetre project with a metre map);
- no map unit is given and the scale only fits a metre map (Scale 0.001 on a millimetre project): the map unit is
  the metre, not the project's unit.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import ifcopenshell

GEOREFERENCE_FILE = "georeference.json"  # in the model's folder, written by the conversion with this module's answer
MAP_CONVERSION = "map-conversion"
EPSET_MAP_CONVERSION = "epset-map-conversion"
SITE = "site"
NONE = "none"
GEOREFERENCED = (MAP_CONVERSION, EPSET_MAP_CONVERSION)

# metres per unit of the names IFC2X3 files write into ePSet_ProjectedCRS.MapUnit as text
_NAMED_UNITS = {"METRE": 1.0, "METER": 1.0, "M": 1.0, "MILLIMETRE": 0.001, "MILLIMETER": 0.001, "MM": 0.001,
                "CENTIMETRE": 0.01, "CENTIMETER": 0.01, "CM": 0.01, "DECIMETRE": 0.1, "DECIMETER": 0.1,
                "KILOMETRE": 1000.0, "KILOMETER": 1000.0, "FOOT": 0.3048, "FT": 0.3048, "US SURVEY FOOT": 1200 / 3937,
                "INCH": 0.0254}
_PLAUSIBLE_SCALE = 2.0  # a combined geodetic scale factor is within a few per mille of 1; a unit slip is >= 10x


def georeference(ifc: ifcopenshell.file | str | Path) -> dict:
    """{"source": "map-conversion" | "epset-map-conversion" | "site" | "none", "matrix": 16 floats (column-major
    4x4, model IFC world in metres -> map frame in metres), "crs": the target CRS's name or None} of an IFC model
    (an open file or a path)."""
    _import_ifcopenshell()
    if not isinstance(ifc, ifcopenshell.file):
        ifc = ifcopenshell.open(str(ifc))
    project_unit = ifcopenshell.util.unit.calculate_unit_scale(ifc) if ifc.by_type("IfcProject") else 1.0
    found = _map_conversion(ifc) or _epset_map_conversion(ifc)
    if found is None:
        source = SITE if ifc.by_type("IfcSite") else NONE
        return {"source": source, "matrix": column_major(np.eye(4)), "crs": None}
    source, parameters, map_unit, crs = found
    matrix = helmert_matrix(parameters, project_unit=project_unit, map_unit=map_unit) @ np.linalg.inv(_wcs(ifc, project_unit))
    return {"source": source, "matrix": column_major(matrix), "crs": crs}


def _import_ifcopenshell() -> None:
    """Imports ifcopenshell (~150 ms) for this module's readers on their first use, not with the module: the
    gateway imports the constants and matrices here in every process and reads a model only for an old model."""
    global ifcopenshell
    import ifcopenshell
    import ifcopenshell.util.element
    import ifcopenshell.util.placement
    import ifcopenshell.util.unit  # noqa: F401


def matrix_of(answer: dict) -> np.ndarray:
    """The 4x4 numpy matrix of a georeference() answer (or of georeference.json)."""
    return np.array(answer["matrix"], dtype=float).reshape(4, 4, order="F")


def helmert_matrix(parameters: dict, *, project_unit: float = 1.0, map_unit: float | None = None) -> np.ndarray:
    """The 4x4 matrix (metres -> metres) of a map conversion's parameters: eastings, northings, height (map unit),
    x_axis_abscissa, x_axis_ordinate, scale_x, scale_y, scale_z (project unit -> map unit, see the module's note on
    the units); project_unit and map_unit in metres per unit, map_unit None when the file names none."""
    abscissa, ordinate = parameters.get("x_axis_abscissa") or 0.0, parameters.get("x_axis_ordinate") or 0.0
    theta = math.atan2(ordinate, abscissa) if (abscissa or ordinate) else 0.0
    scales = np.array([parameters.get(f"scale_{axis}") or 1.0 for axis in "xyz"], dtype=float)
    if map_unit is None:
        map_unit = 1.0 if _implausible(scales) and not _implausible(scales / project_unit) else project_unit
    units = map_unit / project_unit
    if units != 1.0 and _implausible(scales * units) and not _implausible(scales):
        units = 1.0  # Scale without the unit conversion (see the module's note)
    rotation = np.array([[math.cos(theta), -math.sin(theta), 0.0], [math.sin(theta), math.cos(theta), 0.0], [0.0, 0.0, 1.0]])
    matrix = np.eye(4)
    matrix[:3, :3] = rotation @ np.diag(scales * units)
    matrix[:3, 3] = np.array([parameters.get(name) or 0.0 for name in ("eastings", "northings", "height")], dtype=float) * map_unit
    return matrix


def _implausible(scales: np.ndarray) -> bool:
    return bool(np.any(scales > _PLAUSIBLE_SCALE) or np.any(scales < 1 / _PLAUSIBLE_SCALE))


def column_major(matrix: np.ndarray) -> list[float]:
    """A 4x4 matrix as the 16 numbers of the answers (column-major, as xeokit and BCF read them)."""
    return [float(value) for value in matrix.flatten(order="F")]


# --- IFC4 / IFC4X3: IfcMapConversion of the model context ------------------------------------------------------


def _model_contexts(ifc: ifcopenshell.file) -> list:
    """The top-level representation contexts, the 3D model context first."""
    contexts = ifc.by_type("IfcGeometricRepresentationContext", include_subtypes=False)
    return sorted(contexts, key=lambda context: (context.ContextType != "Model", (context.CoordinateSpaceDimension or 3) != 3))


def _map_conversion(ifc: ifcopenshell.file) -> tuple[str, dict, float | None, str | None] | None:
    if ifc.schema == "IFC2X3":
        return None
    for context in _model_contexts(ifc):
        for operation in getattr(context, "HasCoordinateOperation", None) or ():
            parameters = _operation_parameters(operation)
            if parameters is not None:
                crs = operation.TargetCRS
                return MAP_CONVERSION, parameters, _crs_unit(crs), getattr(crs, "Name", None)
    return None


def _operation_parameters(operation) -> dict | None:
    if operation.is_a("IfcMapConversion"):
        scale = operation.Scale or 1.0
        factors = [getattr(operation, f"Factor{axis}", None) or 1.0 for axis in "XYZ"]  # IfcMapConversionScaled
        per_axis = [scale, getattr(operation, "ScaleY", None) or scale, getattr(operation, "ScaleZ", None) or scale]  # IFC4X3 drafts
        return {"eastings": operation.Eastings, "northings": operation.Northings, "height": operation.OrthogonalHeight,
                "x_axis_abscissa": operation.XAxisAbscissa, "x_axis_ordinate": operation.XAxisOrdinate,
                **{f"scale_{axis}": value * factor for axis, value, factor in zip("xyz", per_axis, factors)}}
    if operation.is_a("IfcRigidOperation"):
        first, second = operation.FirstCoordinate, operation.SecondCoordinate
        if not (first.is_a("IfcLengthMeasure") and second.is_a("IfcLengthMeasure")):
            return None  # geographic (angle) coordinates: not a map position this can place
        return {"eastings": first.wrappedValue, "northings": second.wrappedValue, "height": operation.Height}
    return None


def _crs_unit(crs) -> float | None:
    """Metres per map unit: the projected CRS's MapUnit; None when it names none."""
    unit = getattr(crs, "MapUnit", None) if crs is not None and crs.is_a("IfcProjectedCRS") else None
    if unit is None or getattr(unit, "UnitType", "LENGTHUNIT") != "LENGTHUNIT":
        return None
    return ifcopenshell.util.unit.get_unit_scale(unit)


# --- IFC2X3: ePSet_MapConversion / ePSet_ProjectedCRS on IfcProject --------------------------------------------


def _epset_map_conversion(ifc: ifcopenshell.file) -> tuple[str, dict, float | None, str | None] | None:
    projects = ifc.by_type("IfcProject")
    if not projects:
        return None
    conversion = ifcopenshell.util.element.get_pset(projects[0], "ePSet_MapConversion")
    if not conversion:
        return None
    scale = _number(conversion.get("Scale")) or 1.0
    parameters = {"eastings": _number(conversion.get("Eastings")), "northings": _number(conversion.get("Northings")),
                  "height": _number(conversion.get("OrthogonalHeight")), "x_axis_abscissa": _number(conversion.get("XAxisAbscissa")),
                  "x_axis_ordinate": _number(conversion.get("XAxisOrdinate")), "scale_x": scale, "scale_y": scale, "scale_z": scale}
    crs = ifcopenshell.util.element.get_pset(projects[0], "ePSet_ProjectedCRS") or {}
    map_unit = _epset_unit(ifc, crs.get("MapUnit"))
    return EPSET_MAP_CONVERSION, parameters, map_unit, crs.get("Name") or None


def _number(value) -> float:
    try:
        return float(value) if value is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


def _epset_unit(ifc: ifcopenshell.file, value) -> float | None:
    """Metres per map unit from ePSet_ProjectedCRS.MapUnit: a unit entity (IfcPropertyReferenceValue), or its
    name as text ("METRE", "MILLI METRE", "mm"...); None when it names none."""
    if isinstance(value, int):
        value = ifc.by_id(value) if value > 0 else None
    if isinstance(value, ifcopenshell.entity_instance) and value.is_a("IfcNamedUnit"):
        return ifcopenshell.util.unit.get_unit_scale(value)
    if isinstance(value, str):
        name = value.upper().replace("_", " ").strip()
        compact = name.replace(" ", "")
        for key in (name, compact):
            if key in _NAMED_UNITS:
                return _NAMED_UNITS[key]
        for prefix, factor in (("MILLI", 0.001), ("CENTI", 0.01), ("DECI", 0.1), ("KILO", 1000.0)):
            if compact.startswith(prefix) and compact[len(prefix):] in _NAMED_UNITS:
                return factor * _NAMED_UNITS[compact[len(prefix):]]
    return None


# --- the engineering frame -------------------------------------------------------------------------------------


def _wcs(ifc: ifcopenshell.file, project_unit: float) -> np.ndarray:
    """The model context's WorldCoordinateSystem in metres (the frame a map conversion's source is), identity when
    absent; as ifcopenshell.util.geolocation reads it."""
    for context in _model_contexts(ifc):
        placement = getattr(context, "WorldCoordinateSystem", None)
        if placement is not None and placement.is_a("IfcAxis2Placement3D"):
            matrix = np.array(ifcopenshell.util.placement.get_axis2placement(placement), dtype=float)
            matrix[:3, 3] *= project_unit
            return matrix
    return np.eye(4)
