"""element-values.json: the IFC's own value of each override field (Name, Description, Classification, FireRating,
Comments) per element, so a change entry's old value is the IFC's even for fields metadata.json does not carry.

Name and Description are IfcRoot attributes; Classification is the first classification reference's
Identification (IFC4) or ItemReference (IFC2X3), else its Name; FireRating and Comments are properties of that
name, from the element's Pset_...Common first, then its other property sets by name, then its type's."""

from __future__ import annotations

import ifcopenshell.util.classification
import ifcopenshell.util.element

from models_app.conversion.metadata import PROGRESS_EVERY, StreamedObject

PROPERTY_FIELDS = ("FireRating", "Comments")


def _classification(element) -> str:
    for reference in ifcopenshell.util.classification.get_references(element):
        for attribute in ("Identification", "ItemReference", "Name"):
            value = getattr(reference, attribute, None)
            if value:
                return str(value)
    return ""


def _property(psets: dict, field: str) -> str:
    for name in sorted(psets, key=lambda n: (not n.endswith("Common"), n)):
        value = psets[name].get(field)
        if value not in (None, ""):
            return str(value)
    return ""


def _values(element) -> dict[str, str]:
    fields = {"Name": element.Name or "", "Description": element.Description or "", "Classification": _classification(element)}
    own = ifcopenshell.util.element.get_psets(element, psets_only=True, should_inherit=False)
    element_type = ifcopenshell.util.element.get_type(element)
    inherited = ifcopenshell.util.element.get_psets(element_type, psets_only=True) if element_type else {}
    for field in PROPERTY_FIELDS:
        fields[field] = _property(own, field) or _property(inherited, field)
    return {field: value for field, value in fields.items() if value}


def _elements(ifc) -> dict:
    # GlobalId -> element; a later duplicate GlobalId takes the earlier one's place
    return {element.GlobalId: element for element in ifc.by_type("IfcProduct")}


def element_values(ifc) -> dict[str, dict[str, str]]:
    return {guid: _values(element) for guid, element in _elements(ifc).items()}


def write_element_values(ifc, handle, on_progress=lambda fraction: None) -> None:
    """Streams the JSON text json.dump(element_values(ifc), handle, ensure_ascii=False, separators=(",", ":"))
    writes, without holding the values of all elements."""
    elements = _elements(ifc)
    values = StreamedObject(handle)
    for index, (guid, element) in enumerate(elements.items()):
        values.member(guid, _values(element))
        if index % PROGRESS_EVERY == 0:
            on_progress(index / len(elements))
    values.end()
