"""The model's effective property overrides (issues_app: Name, Description, Classification, FireRating, Comments),
applied to an in-memory IFC before it is checked, so a check shows whether the overrides would make it pass.

They land where the conversion reads them from (models_app/conversion/element_values.py), touching only the
element that carries the override:
- Name, Description: the element's attributes.
- Classification: the element's first classification reference is replaced, for this element only, by one with
  the override as its identification in the same classification system; an element without one gets a reference
  in the model's first classification system (or a new system named "Overrides").
- FireRating, Comments: the property of that name in the element's own property set that has it (Pset_...Common
  first); a property set shared with other elements is copied for this element first. An element without such a
  property gets it in its own property set of the name its type uses for it, else Pset_<Class>Common, which
  takes precedence over the type's value.
"""

from __future__ import annotations

import ifcopenshell
import ifcopenshell.api.classification
import ifcopenshell.api.pset
import ifcopenshell.util.classification
import ifcopenshell.util.element

ATTRIBUTE_FIELDS = ("Name", "Description")
PROPERTY_FIELDS = ("FireRating", "Comments")
FALLBACK_SYSTEM = "Overrides"


def _common_first(names) -> list[str]:
    return sorted(names, key=lambda name: (not name.endswith("Common"), name))


def _common_pset_name(element) -> str:
    name = element.is_a()[3:]
    for suffix in ("StandardCase", "ElementedCase"):
        name = name.removesuffix(suffix)
    return f"Pset_{name}Common"


def _own_pset(ifc: ifcopenshell.file, element, pset_id: int):
    pset = ifc.by_id(pset_id)
    if len(ifcopenshell.util.element.get_elements_by_pset(pset)) > 1:
        pset = ifcopenshell.api.pset.unshare_pset(ifc, products=[element], pset=pset)[0]
    return pset


def _set_property(ifc: ifcopenshell.file, element, field: str, value: str) -> None:
    own = ifcopenshell.util.element.get_psets(element, psets_only=True, should_inherit=False)
    holder = next((name for name in _common_first(own) if field in own[name]), None)
    if holder is None:
        element_type = ifcopenshell.util.element.get_type(element)
        inherited = ifcopenshell.util.element.get_psets(element_type, psets_only=True) if element_type else {}
        holder = next((name for name in _common_first(inherited) if field in inherited[name]), None) or _common_pset_name(element)
    if holder in own:
        pset = _own_pset(ifc, element, own[holder]["id"])
    else:
        pset = ifcopenshell.api.pset.add_pset(ifc, product=element, name=holder)
    ifcopenshell.api.pset.edit_pset(ifc, pset=pset, properties={field: value})


def _classification_system(ifc: ifcopenshell.file, reference):
    if reference is not None:
        system = ifcopenshell.util.classification.get_classification(reference)
        if system is not None:
            return system
    systems = ifc.by_type("IfcClassification")
    if systems:
        return systems[0]
    return ifcopenshell.api.classification.add_classification(ifc, classification=FALLBACK_SYSTEM)


def _set_classification(ifc: ifcopenshell.file, element, value: str) -> None:
    references = sorted(ifcopenshell.util.classification.get_references(element), key=lambda ref: ref.id())
    first = references[0] if references else None
    system = _classification_system(ifc, first)
    if first is not None:
        ifcopenshell.api.classification.remove_reference(ifc, reference=first, products=[element])
    ifcopenshell.api.classification.add_reference(
        ifc, products=[element], identification=value, name=getattr(first, "Name", None) or value, classification=system
    )


def apply_overrides(ifc: ifcopenshell.file, overrides: dict[str, dict[str, str]]) -> dict:
    """overrides: {GlobalId: {field: value}} (the effective override set). Returns what was applied:
    {elements, fields, missing: [GlobalIds the IFC does not have], failed: [{guid, field, reason}]}."""
    applied_elements, fields, missing, failed = 0, 0, [], []
    for guid, values in sorted(overrides.items()):
        try:
            element = ifc.by_guid(guid)
        except RuntimeError:
            missing.append(guid)
            continue
        applied = 0
        for field, value in sorted(values.items()):
            try:
                if field in ATTRIBUTE_FIELDS:
                    setattr(element, field, value)
                elif field == "Classification":
                    _set_classification(ifc, element, value)
                elif field in PROPERTY_FIELDS:
                    _set_property(ifc, element, field, value)
                else:
                    raise ValueError(f"{field} is not an override field")
                applied += 1
            except Exception as exc:  # noqa: BLE001 - one element the API cannot edit must not fail the check
                failed.append({"guid": guid, "field": field, "reason": f"{type(exc).__name__}: {exc}"})
        fields += applied
        applied_elements += bool(applied)
    return {"elements": applied_elements, "fields": fields, "missing": missing, "failed": failed}
