"""Semantic snapshot of an IFC: GlobalId -> {"class", "name", "attributes"} for the project and every IfcProduct.

attributes holds the direct attributes that are not entity references (GlobalId, OwnerHistory, placement and
representation are references or identity and are left out) and "PsetName.property" for the element's property
and quantity sets, type-object sets included (the occurrence's own set of the same name wins). Values are
normalised as typed values: IFC wrappers unwrapped, whole floats as ints, floats to 12 significant digits, so the
same model written twice compares equal. Used for the semantic diff.

Each element also carries "geometry" (geometry_facts): its world placement and the facts of its body shape, so a
moved, turned or resized element shows as changed. A snapshot written before geometry was recorded has no
"geometry" key; the diff treats that as unknown, never as a change.
"""

from __future__ import annotations

import hashlib
import os

from ifcopenshell import entity_instance

SKIPPED_ATTRIBUTES = {"GlobalId", "OwnerHistory", "ObjectPlacement", "Representation"}
# Positional attribute indices (the same in IFC2X3, IFC4 and IFC4X3); indexing is several times faster than names.
NAME, NOMINAL_VALUE, HAS_PROPERTIES, QUANTITIES = 0, 2, 4, 5
PSET_NAME, RELATED_OBJECTS, RELATING_DEFINITION = 2, 4, 5


def normalise(value):
    if isinstance(value, entity_instance):
        if value.id() == 0 and hasattr(value, "wrappedValue"):  # IfcLabel(...), IfcLengthMeasure(...)
            return normalise(value.wrappedValue)
        return None  # an entity reference
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        return float(f"{value:.12g}")
    if isinstance(value, (tuple, list)):
        items = [normalise(item) for item in value]
        return None if any(item is None for item in items) and items else items
    return str(value)


def _property_values(prop, prefix: str, out: dict) -> None:
    kind = prop.is_a()
    name = f"{prefix}.{prop[NAME]}"
    if kind == "IfcPropertySingleValue":
        out[name] = normalise(prop[NOMINAL_VALUE])
    elif kind == "IfcPropertyEnumeratedValue":
        out[name] = normalise(prop.EnumerationValues)
    elif kind == "IfcPropertyListValue":
        out[name] = normalise(prop.ListValues)
    elif kind == "IfcPropertyBoundedValue":
        out[name] = [normalise(prop.LowerBoundValue), normalise(prop.UpperBoundValue)]
    elif kind == "IfcPropertyTableValue":
        out[name] = [normalise(prop.DefiningValues), normalise(prop.DefinedValues)]
    elif kind == "IfcComplexProperty":
        for sub in prop.HasProperties or ():
            _property_values(sub, name, out)
    elif kind.startswith("IfcQuantity"):
        out[name] = normalise(prop[3])
    elif kind == "IfcPhysicalComplexQuantity":
        for sub in prop.HasQuantities or ():
            _property_values(sub, name, out)


def _set_values(pset) -> dict:
    values: dict = {}
    kind = pset.is_a()
    if kind == "IfcPropertySet":
        for prop in pset[HAS_PROPERTIES] or ():
            _property_values(prop, pset[PSET_NAME], values)
    elif kind == "IfcElementQuantity":
        for quantity in pset[QUANTITIES] or ():
            _property_values(quantity, pset[PSET_NAME], values)
    return values


def _direct_attributes(element, names) -> dict:
    values = {}
    for index, name in enumerate(names):
        if name in SKIPPED_ATTRIBUTES:
            continue
        raw = element[index]
        value = normalise(raw)
        if value is None and raw is not None:
            continue  # entity references are not compared
        values[name] = value
    return values


def _definitions(rel):
    definition = rel[RELATING_DEFINITION]
    if isinstance(definition, (tuple, list)):
        return list(definition)
    return [definition]


def snapshot(model, with_geometry: bool = True, geometry_seconds: float | None = None) -> dict:
    import ifcopenshell.ifcopenshell_wrapper as wrapper

    schema = wrapper.schema_by_name(model.schema_identifier if hasattr(model, "schema_identifier") else model.schema)
    type_sets: dict[int, dict] = {}
    for rel in model.by_type("IfcRelDefinesByType"):
        values = {}
        for pset in rel.RelatingType.HasPropertySets or ():
            values.update(_set_values(pset))
        for obj in rel.RelatedObjects:
            type_sets.setdefault(obj.id(), {}).update(values)
    own_sets: dict[int, dict] = {}
    for rel in model.by_type("IfcRelDefinesByProperties"):
        values = {}
        for pset in _definitions(rel):
            values.update(_set_values(pset))
        for obj in rel[RELATED_OBJECTS]:
            own_sets.setdefault(obj.id(), {}).update(values)

    attribute_names: dict[str, tuple] = {}
    result = {}
    for element in [*model.by_type("IfcProject"), *model.by_type("IfcProduct")]:
        cls = element.is_a()
        names = attribute_names.get(cls)
        if names is None:
            names = attribute_names[cls] = tuple(a.name() for a in schema.declaration_by_name(cls).all_attributes())
        attributes = _direct_attributes(element, names)
        attributes.update(type_sets.get(element.id(), {}))
        attributes.update(own_sets.get(element.id(), {}))
        result[element.GlobalId] = {"class": cls, "name": element.Name or "", "attributes": attributes}
    if with_geometry:
        facts, complete = geometry_facts(model, GEOMETRY_BUDGET_SECONDS if geometry_seconds is None else geometry_seconds)
        for guid, element in result.items():
            if guid in facts:
                element["geometry"] = facts[guid]
            elif complete:  # the project, which has no placement; past the time budget an element stays unknown
                element["geometry"] = {"placement": None, "shape": None}
    return result


# --- geometry --------------------------------------------------------------------------------------------------

DECIMALS = 6  # metres: a micrometre, far below any tolerance of the diff, so float noise of a rebuild rounds away
# Seconds the geometry may take, well inside the inspection's CPU and wall limits (60 s by default): a model too big
# to measure in time keeps the rest of its geometry unknown instead of failing the run that made it.
GEOMETRY_BUDGET_SECONDS = 15.0
THREADS = 4


def _rounded(values) -> list:
    return [round(float(v), DECIMALS) + 0.0 for v in values]  # + 0.0: no -0.0


def _placement(matrix) -> dict:
    """A 4x4 world matrix (metres) as origin and the local X and Z axes."""
    return {"origin": _rounded(matrix[:3, 3]), "xAxis": _rounded(matrix[:3, 0]), "zAxis": _rounded(matrix[:3, 2])}


def _shape_facts(geometry) -> dict:
    """Facts of one triangulated body in the element's own axes: bounding box, volume, fingerprint."""
    import numpy as np

    verts = np.frombuffer(geometry.verts_buffer, "d").reshape(-1, 3)
    faces = np.frombuffer(geometry.faces_buffer, "i").reshape(-1, 3)
    if not len(verts):
        return {}
    # the divergence theorem over the triangles (ifcopenshell.util.shape.get_volume, vectorised)
    p1, p2, p3 = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
    volume = abs(float(np.einsum("ij,ij->i", p1, np.cross(p2, p3)).sum()) / 6.0)
    rounded = np.round(verts, 4) + 0.0  # a tenth of a millimetre: the fingerprint ignores float noise
    digest = hashlib.sha1(rounded.tobytes())
    digest.update(np.ascontiguousarray(faces).tobytes())
    return {"min": _rounded(verts.min(axis=0)), "max": _rounded(verts.max(axis=0)), "volume": round(volume, 9) + 0.0,
            "fingerprint": digest.hexdigest()[:16]}


def _iterator_settings(model):
    import ifcopenshell.geom

    settings = ifcopenshell.geom.settings()
    # openings are elements of their own in the diff; subtracting them is the slow part of the tessellation
    settings.set("disable-opening-subtractions", True)
    body = [c.id() for c in model.by_type("IfcGeometricRepresentationSubContext") if c.ContextIdentifier in ("Body", "Facetation")]
    body += [c.id() for c in model.by_type("IfcGeometricRepresentationContext", include_subtypes=False) if c.ContextType == "Model"]
    if body:
        settings.set("context-ids", body)
    return settings


def geometry_facts(model, budget_seconds: float = GEOMETRY_BUDGET_SECONDS) -> tuple[dict, bool]:
    """(GlobalId -> {"placement": {"origin", "xAxis", "zAxis"} | None, "shape": {"min", "max", "volume",
    "fingerprint"} | None}, complete) for the products: placement in world coordinates, shape in the element's own
    axes (so a turn is not a resize), all in metres. Shapes come from one pass of the geometry iterator; complete
    is False when the time budget ran out first (the products not reached have no facts)."""
    import time

    import ifcopenshell.geom
    import ifcopenshell.util.placement
    import ifcopenshell.util.unit
    import numpy as np

    deadline = time.monotonic() + budget_seconds
    facts: dict[str, dict] = {}
    per_geometry: dict[str, dict] = {}  # shared representations (mapped items) are measured once
    products = model.by_type("IfcProduct")
    if products and any(p.Representation for p in products):
        iterator = ifcopenshell.geom.iterator(_iterator_settings(model), model, max(1, min(os.cpu_count() or 1, THREADS)))
        if iterator.initialize():
            while True:
                if time.monotonic() > deadline:
                    return facts, False
                shape = iterator.get()
                matrix = np.array(shape.transformation.matrix, dtype=float).reshape(4, 4).T  # column-major
                geometry = shape.geometry
                key = geometry.id
                if key not in per_geometry:
                    per_geometry[key] = _shape_facts(geometry)
                facts[shape.guid] = {"placement": _placement(matrix), "shape": per_geometry[key] or None}
                if not iterator.next():
                    break
    scale = None
    for product in products:
        if product.GlobalId in facts:
            continue
        placement = None
        if getattr(product, "ObjectPlacement", None) is not None:
            if scale is None:
                scale = ifcopenshell.util.unit.calculate_unit_scale(model)
            matrix = np.array(ifcopenshell.util.placement.get_local_placement(product.ObjectPlacement), dtype=float)
            matrix[:3, 3] *= scale
            placement = _placement(matrix)
        facts[product.GlobalId] = {"placement": placement, "shape": None}
    return facts, True
