"""Semantic snapshot of an IFC: GlobalId -> {"class", "name", "attributes"} for the project and every IfcProduct.

attributes holds the direct attributes that are not entity references (GlobalId, OwnerHistory, placement and
representation are references or identity and are left out) and "PsetName.property" for the element's property
and quantity sets, type-object sets included (the occurrence's own set of the same name wins). Values are
normalised as typed values: IFC wrappers unwrapped, whole floats as ints, floats to 12 significant digits, so the
same model written twice compares equal. Used for the semantic diff; no geometry.
"""

from __future__ import annotations

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


def snapshot(model) -> dict:
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
    return result
