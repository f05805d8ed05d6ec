"""metadata.json (xeokit meta-model) from an IFC file opened with ifcopenshell.

metaObjects: the IfcProject as root, then every IfcProduct, parented along aggregation, spatial containment,
nesting and voiding (anything without a parent hangs under the project). propertySets: property sets, quantity
sets and predefined property sets of each object and of its type object, with IFC value type names. Only sets
referenced by some object are emitted, so no propertySetId dangles.
"""

from __future__ import annotations

import json
from collections import defaultdict

PSET_TYPE = "Pset"
PROGRESS_EVERY = 2000

QUANTITY_MEASURES = {
    "IfcQuantityLength": "IfcLengthMeasure",
    "IfcQuantityArea": "IfcAreaMeasure",
    "IfcQuantityVolume": "IfcVolumeMeasure",
    "IfcQuantityCount": "IfcCountMeasure",
    "IfcQuantityWeight": "IfcMassMeasure",
    "IfcQuantityTime": "IfcTimeMeasure",
    "IfcQuantityNumber": "IfcNumericMeasure",
}


def _plain(value):
    """An ifcopenshell attribute value as JSON (entity references become their GlobalId or class name)."""
    if hasattr(value, "is_a"):
        if value.is_a() and hasattr(value, "wrappedValue") and value.id() == 0:
            return _plain(value.wrappedValue)
        return getattr(value, "GlobalId", None) or getattr(value, "Name", None) or value.is_a()
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    return value


def _typed(values) -> tuple[object, str]:
    """(value, IFC type name) of one or more IfcValue instances; several values are joined as text."""
    values = [v for v in (values or ()) if v is not None]
    if not values:
        return None, ""
    type_name = values[0].is_a()
    if len(values) == 1:
        return _plain(values[0].wrappedValue), type_name
    return ", ".join(str(_plain(v.wrappedValue)) for v in values), type_name


def _property_rows(prop, prefix: str = "") -> list[dict]:
    name = prefix + (prop.Name or "")
    kind = prop.is_a()
    if kind == "IfcPropertySingleValue":
        value, type_name = _typed([prop.NominalValue])
    elif kind == "IfcPropertyEnumeratedValue":
        value, type_name = _typed(prop.EnumerationValues)
    elif kind == "IfcPropertyListValue":
        value, type_name = _typed(prop.ListValues)
    elif kind == "IfcPropertyBoundedValue":
        lower, lower_type = _typed([prop.LowerBoundValue])
        upper, upper_type = _typed([prop.UpperBoundValue])
        value, type_name = f"{'' if lower is None else lower} .. {'' if upper is None else upper}", lower_type or upper_type
    elif kind == "IfcPropertyTableValue":
        defining = [_plain(v.wrappedValue) for v in prop.DefiningValues or ()]
        defined = [_plain(v.wrappedValue) for v in prop.DefinedValues or ()]
        value, type_name = ", ".join(f"{a}: {b}" for a, b in zip(defining, defined)), kind
    elif kind == "IfcPropertyReferenceValue":
        ref = prop.PropertyReference
        value, type_name = (_plain(ref) if ref is not None else None), kind
    elif kind == "IfcComplexProperty":
        rows = []
        for sub in prop.HasProperties or ():
            rows.extend(_property_rows(sub, prefix=f"{name}."))
        return rows
    else:
        value, type_name = None, kind
    return [{"name": name, "value": value, "type": type_name}]


def _quantity_rows(quantity) -> list[dict]:
    kind = quantity.is_a()
    if kind == "IfcPhysicalComplexQuantity":
        rows = []
        for sub in quantity.HasQuantities or ():
            for row in _quantity_rows(sub):
                rows.append({**row, "name": f"{quantity.Name}.{row['name']}"})
        return rows
    value = quantity[3] if len(quantity) > 3 else None
    return [{"name": quantity.Name, "value": _plain(value), "type": QUANTITY_MEASURES.get(kind, kind)}]


def _predefined_rows(pset) -> list[dict]:
    rows = []
    info = pset.get_info(recursive=False, include_identifier=False)
    for key, value in info.items():
        if key in ("type", "GlobalId", "OwnerHistory", "Name", "Description") or value is None:
            continue
        if hasattr(value, "is_a") and value.id() != 0:
            continue  # entity references are not property values
        rows.append({"name": key, "value": _plain(value), "type": type(value).__name__ if not hasattr(value, "is_a") else value.is_a()})
    return rows


def property_set_entry(pset) -> dict:
    if pset.is_a("IfcElementQuantity"):
        rows = [row for q in pset.Quantities or () for row in _quantity_rows(q)]
    elif pset.is_a("IfcPropertySet"):
        rows = [row for p in pset.HasProperties or () for row in _property_rows(p)]
    else:
        rows = _predefined_rows(pset)
    return {"id": pset.GlobalId, "name": pset.Name or pset.is_a(), "type": PSET_TYPE, "properties": rows}


def _definitions(rel):
    definition = rel.RelatingPropertyDefinition
    if isinstance(definition, (tuple, list)):
        return list(definition)
    if definition.is_a("IfcPropertySetDefinitionSet"):  # IFC4: a set of definitions in one relationship
        return list(definition.wrappedValue)
    return [definition]


def _parent_map(ifc) -> dict[int, object]:
    parents: dict[int, object] = {}

    def link(children, parent, overwrite=False):
        for child in children or ():
            if overwrite or child.id() not in parents:
                parents[child.id()] = parent

    for rel in ifc.by_type("IfcRelAggregates"):
        link(rel.RelatedObjects, rel.RelatingObject, overwrite=True)
    for rel in ifc.by_type("IfcRelContainedInSpatialStructure"):
        link(rel.RelatedElements, rel.RelatingStructure)
    for rel in ifc.by_type("IfcRelNests"):
        link(rel.RelatedObjects, rel.RelatingObject)
    for rel in ifc.by_type("IfcRelVoidsElement"):
        link([rel.RelatedOpeningElement], rel.RelatingBuildingElement)
    return parents


def _property_sets_by_object(ifc, on_progress=lambda fraction: None) -> tuple[dict[int, list], dict[str, object]]:
    by_object: dict[int, list] = defaultdict(list)
    pset_by_guid: dict[str, object] = {}

    def attach(objects, psets):
        for pset in psets:
            if pset is None or not getattr(pset, "GlobalId", None):
                continue
            pset_by_guid.setdefault(pset.GlobalId, pset)
            for obj in objects or ():
                by_object[obj.id()].append(pset.GlobalId)

    by_properties = ifc.by_type("IfcRelDefinesByProperties")
    for index, rel in enumerate(by_properties):
        attach(rel.RelatedObjects, _definitions(rel))
        if index % (10 * PROGRESS_EVERY) == 0:
            on_progress(index / len(by_properties))
    for rel in ifc.by_type("IfcRelDefinesByType"):
        attach(rel.RelatedObjects, rel.RelatingType.HasPropertySets or ())
    return by_object, pset_by_guid


def _parent_ids_without_loops(products, parents: dict[int, object], included: set[int], project_id: int) -> dict[int, int]:
    """Each product's parent (STEP id): its container or aggregate when that is in the meta-model, else the project;
    self and cyclic parents repaired as parents_without_loops does."""
    links = []
    for product in products:
        parent = parents.get(product.id())
        links.append({"id": product.id(), "parent": parent.id() if parent is not None and parent.id() in included else project_id})
    return {link["id"]: link["parent"] for link in parents_without_loops(links, project_id)}


class MetaModel:
    """The meta-model of one IFC, produced piece by piece: the meta objects, then the property sets they reference.
    build() collects it into one dict; write() streams the same JSON text (byte for byte) without holding it."""

    def __init__(self, ifc):
        projects = ifc.by_type("IfcProject")
        if not projects:
            raise ValueError("the IFC file has no IfcProject")
        self.ifc = ifc
        self.project = projects[0]
        self.header = {"projectId": self.project.GlobalId, "schema": ifc.schema}
        self.products = ifc.by_type("IfcProduct")
        self._used_psets: dict[str, None] = {}
        self._pset_by_guid: dict[str, object] = {}

    def meta_objects(self, on_progress=lambda fraction: None):
        on_progress(0.0)
        project, products = self.project, self.products
        included = {project.id(), *(p.id() for p in products)}
        parents = _parent_map(self.ifc)
        parent_ids = _parent_ids_without_loops(products, parents, included, project.id())
        on_progress(0.1)
        psets_by_object, self._pset_by_guid = _property_sets_by_object(self.ifc, lambda fraction: on_progress(0.1 + 0.15 * fraction))
        on_progress(0.25)
        seen_guids: set[str] = set()
        for obj in [project, *products]:
            guid = obj.GlobalId
            if guid in seen_guids:
                continue
            seen_guids.add(guid)
            if len(seen_guids) % PROGRESS_EVERY == 0:
                on_progress(0.25 + 0.35 * len(seen_guids) / len(included))
            entry = {"id": guid, "type": obj.is_a(), "name": obj.Name or ""}
            if obj is not project:
                entry["parent"] = self.ifc.by_id(parent_ids[obj.id()]).GlobalId
            pset_ids = list(dict.fromkeys(psets_by_object.get(obj.id(), ())))
            if pset_ids:
                entry["propertySetIds"] = pset_ids
                self._used_psets.update(dict.fromkeys(pset_ids))
            yield entry

    def property_sets(self, on_progress=lambda fraction: None):
        """The sets referenced by the meta objects (after meta_objects() was consumed)."""
        for index, guid in enumerate(self._used_psets):
            if index % PROGRESS_EVERY == 0:
                on_progress(0.6 + 0.4 * index / len(self._used_psets))
            yield property_set_entry(self._pset_by_guid[guid])

    def build(self) -> dict:
        meta_objects = list(self.meta_objects())
        return {**self.header, "metaObjects": meta_objects, "propertySets": list(self.property_sets())}

    def write(self, handle, on_progress=lambda fraction: None) -> None:
        """Streams the JSON that json.dump(self.build(), handle, ensure_ascii=False, separators=(",", ":")) writes;
        on_progress gets the fraction done (0..1)."""
        handle.write(dumps(self.header)[:-1] + ',"metaObjects":[')
        for index, entry in enumerate(self.meta_objects(on_progress)):
            handle.write(("," if index else "") + dumps(entry))
        handle.write('],"propertySets":[')
        for index, entry in enumerate(self.property_sets(on_progress)):
            handle.write(("," if index else "") + dumps(entry))
        handle.write("]}")


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class StreamedObject:
    """A JSON object written member by member: the text dumps() gives for the whole dict, without holding it."""

    def __init__(self, handle):
        self.handle, self.separator = handle, "{"

    def member(self, key: str, value) -> None:
        self.handle.write(self.separator + dumps(key) + ":" + dumps(value))
        self.separator = ","

    def end(self) -> None:
        self.handle.write("{}" if self.separator == "{" else "}")


def build_metadata(ifc) -> dict:
    return MetaModel(ifc).build()


def normalise_fallback_metadata(meta: dict) -> dict:
    """Repairs xeokit-convert's own IFC metadata: projectId becomes the IfcProject GlobalId, dangling ids go."""
    objects = meta.get("metaObjects", [])
    project = next((o for o in objects if o.get("type") == "IfcProject"), None)
    if project is not None:
        meta["projectId"] = project["id"]
    pset_ids = {p["id"] for p in meta.get("propertySets", [])}
    object_ids = {o["id"] for o in objects}
    for obj in objects:
        ids = [i for i in obj.pop("propertySetIds", None) or () if i in pset_ids]
        if ids:
            obj["propertySetIds"] = ids
        if obj.get("parent") is not None and obj["parent"] not in object_ids:
            obj.pop("parent")
        obj["name"] = obj.get("name") or ""
    for pset in meta.get("propertySets", []):
        pset["type"] = PSET_TYPE
    parents_without_loops(objects, project["id"] if project is not None else None)
    return meta


def parents_without_loops(meta_objects: list[dict], root_id: str | None) -> list[dict]:
    """Repairs self and cyclic parents (an element that aggregates itself, or a ring of aggregations): the object
    whose parent closes a loop is re-parented to the root (or loses its parent without a root), so every chain of
    parents ends. Each object is walked once."""
    by_id = {o["id"]: o for o in meta_objects}
    ended: set = {root_id}
    for obj in meta_objects:
        path, on_path, current = [], set(), obj
        while current is not None and current["id"] not in ended:
            path.append(current)
            on_path.add(current["id"])
            parent = by_id.get(current.get("parent"))
            if parent is not None and parent["id"] in on_path:
                if root_id is None:
                    current.pop("parent")
                else:
                    current["parent"] = root_id
                break
            current = parent
        ended.update(o["id"] for o in path)
    return meta_objects
