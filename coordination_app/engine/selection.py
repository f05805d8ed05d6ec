"""Which elements of a model a clash test's set takes: IFC classes (each counting its subclasses, by the model's
schema as ifcopenshell knows it) less the excluded classes."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=8)
def _declarations(schema: str) -> dict[str, object]:
    import ifcopenshell.ifcopenshell_wrapper as wrapper

    try:
        declared = wrapper.schema_by_name(_schema_name(schema))
    except RuntimeError:
        declared = wrapper.schema_by_name("IFC4")
    return {entity.name().lower(): entity for entity in declared.entities()}


def _schema_name(schema: str) -> str:
    """ifcopenshell's name of a schema as a file's header or metadata.json gives it (IFC4X3_RC1.. read as IFC4X3_ADD2)."""
    upper = (schema or "IFC4").upper()
    if upper.startswith("IFC4X3"):
        return "IFC4X3_ADD2"
    return upper


@lru_cache(maxsize=4096)
def _ancestors(schema: str, name: str) -> frozenset[str]:
    """The class and every class above it, lower case; empty when the schema has no such class."""
    entity = _declarations(schema).get(name.lower())
    found = set()
    while entity is not None:
        found.add(entity.name().lower())
        entity = entity.supertype()
    return frozenset(found)


def unknown_classes(names: list[str], schema: str) -> list[str]:
    """The names among `names` that are not classes of the schema (for a 40001 naming them)."""
    declared = _declarations(schema)
    return [name for name in names if name.lower() not in declared]


def select(types_by_guid: dict[str, str], schema: str, classes: list[str] | None, exclude: list[str] | None) -> frozenset[str]:
    """The GlobalIds whose class is one of `classes` or below one (None or empty: every element) and neither one of
    `exclude` nor below one."""
    wanted = {name.lower() for name in classes or ()}
    unwanted = {name.lower() for name in exclude or ()}
    chosen = []
    for guid, ifc_class in types_by_guid.items():
        above = _ancestors(schema, ifc_class) or frozenset({ifc_class.lower()})
        if (not wanted or above & wanted) and not above & unwanted:
            chosen.append(guid)
    return frozenset(chosen)


def filters(side: dict | None) -> bool:
    """Whether a test's side (or a clash job's "select") takes only some classes: it names classes or excludes some."""
    return side is not None and (side.get("classes") is not None or bool(side.get("exclude")))


def picked(facts: dict[str, dict], schema: str, side: dict | None) -> frozenset[str] | None:
    """The GlobalIds among `facts` ({GlobalId: {type, ...}}, engine.elements.facts) that the side's class filter
    takes; None when it has none (every element)."""
    if not filters(side):
        return None
    return select({guid: fact["type"] for guid, fact in facts.items()}, schema, side.get("classes"), side.get("exclude") or None)
