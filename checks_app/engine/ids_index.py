"""What ifctester works out again per element and per facet, worked out once per model: the specifications of a
check are evaluated over this index instead of by ifctester's `Specification.validate`, with the same facets (and
the corrections of ids_engine), the same order and the same outcomes.

ifctester asks every facet about every candidate element: a property facet reads the element's property sets
(through its type) again for each facet and each specification (its lru_cache of 128 entries holds nothing of a
model with thousands of elements), a classification facet walks the references and their systems, a material facet
the associations, a part-of facet the relationships, a restriction builds a new Restriction and matches its
patterns. Yet what a facet decides about an element depends on a few things about the element only, its *key*:

- a property facet on an object (not a type, material or profile): the property sets of the names it asks for, of
  the element's type and of the element itself, each by its content (class, name, and the STEP text of each
  property, which names the referenced units and values by id), in the order ifcopenshell's get_pset / get_psets
  read them. Elements whose property sets say the same thing (the walls of one type, a design tool's identical
  Pset_WallCommon on each wall) share one evaluation;
- a classification facet: the element's references (its own and its type's, in ifcopenshell's order; elements
  without any share one key whatever their type);
- a material facet: the element's material (ifcopenshell's get_material, usages skipped, the type's when the element
  has none);
- a part-of facet: the first relation it follows (the container, the aggregate, the nest, the group, the voided
  element, or the spatial parent), from which ifctester's walk up the tree depends on that relation alone;
- an attribute facet naming one attribute: the element's class and the attribute's value (by type and repr), or
  non-empty text alone, whatever the class (asked of many elements, it reads them in bulk: passing);
- an entity facet without a predefined type (not IFC2X3): the element's class.

The index keeps each element's keys (computed once, shared by every facet that needs them) and each facet's
outcome per key, so a facet runs once per distinct key, not once per element; elements without a key (an attribute
whose value is a list, a facet with a restricted attribute name, ...) are asked directly, as ifctester does. The
applicability keeps ifctester's broadphase (the first facet's candidates, narrowed by each further facet, in
ifctester's order) with the outcomes taken from the index; the candidate lists per class are kept for the model.
What is read of many elements at once (candidates with their attribute, property sets, relationships) is read in
sweeps of ifcopenshell's own methods, and the whole check makes its wrappers in bulk (wrappers_in_bulk).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import operator
from dataclasses import dataclass, field
from typing import Callable

import ifcopenshell
import ifcopenshell.ifcopenshell_wrapper
import ifcopenshell.util.classification
import ifcopenshell.util.element
from ifctester import facet as ifctester_facet

UNCACHED = object()  # a key that says: ask the facet about this element directly
INVERSE, DERIVED = 2, 3  # ifcopenshell's attribute categories of an inverse and a derived attribute


@dataclass
class Evaluation:
    """A specification's outcome over a model, as ifctester's validate leaves it: the applicable elements in order,
    the elements failing a requirement, and each failing (element, requirement index, outcome) in evaluation order."""

    applicable: list = field(default_factory=list)
    failed_elements: set = field(default_factory=set)
    failures: list = field(default_factory=list)


def _value_key(value):
    """A hashable stand-in for an attribute value that tells apart what the facet's verdict or its reported value
    could tell apart (1 and True and 1.0 are one dict key in Python, -0.0 and 0.0 too); UNCACHED for lists."""
    if value is None or isinstance(value, (str, bool, int)):
        return type(value), value
    if isinstance(value, float):
        return float, repr(value)
    if isinstance(value, ifcopenshell.entity_instance):
        return ("entity", value.id()) if value.is_entity() else ("value", value.is_a(), repr(value.wrappedValue))
    return UNCACHED


NULL_KEY = _value_key(None)


def _attribute_place(element, name: str) -> tuple:
    """(category, argument index, takes text as it is) of an attribute in the element's class: category 1 = a forward
    attribute, read by its index; text is taken as it is unless the attribute is a LOGICAL (whose 'UNKNOWN' ifctester
    reads as empty)."""
    category = element.get_attribute_category(name)
    if category != 1:
        return category, -1, False
    index = element.get_argument_index(name)
    try:
        return category, index, element.attribute_type(index) != "LOGICAL"
    except Exception:  # noqa: BLE001 - ifctester then looks further: ask it
        return category, index, False


def _attribute_value_key(ifc_class: str, value, takes_text: bool):
    """An attribute facet's key of a forward attribute's value: non-empty text that ifctester cannot take for empty
    is its own key, whatever the class (see _text_outcome); anything else (class, value key), UNCACHED for lists."""
    if takes_text and value.__class__ is str and value:
        return value
    value = _value_key(value)
    return UNCACHED if value is UNCACHED else (ifc_class, value)


def _text_matches(facet, text: str) -> bool:
    """Whether non-empty text meets an attribute facet's value (none: any text), as ifctester compares them."""
    return not facet.value or not text != facet.value


def _text_outcome(facet, text: str):
    """What ifctester's Attribute facet answers for a forward attribute holding non-empty text (not a LOGICAL):
    a value to compare is compared with the text (a simple value or a restriction, as ifctester compares it), and a
    prohibited facet turns the verdict around. Worked out here because the facet's own call reads the attribute and
    its declaration again for each distinct text (tens of thousands of names and GlobalIds); the tests compare it
    with the facet's answer."""
    passed = _text_matches(facet, text)
    if facet.cardinality == "prohibited":
        return ifctester_facet.AttributeResult(not passed, {"type": "PROHIBITED"})
    return ifctester_facet.AttributeResult(passed, None if passed else {"type": "VALUE", "actual": text})


SCHEMAS = ("IFC2X3", "IFC4", "IFC4X3_ADD2")
# attributes an attribute-only applicability commonly names: their classes are found before a check (warm_up)
COMMON_ATTRIBUTES = ("Name", "Description", "GlobalId", "ObjectType", "Tag", "LongName", "PredefinedType")


def warm_up() -> None:
    """What the index keeps per process and can know before a model: the classes of the common attributes and the
    attribute's place in each (the check zygote calls this before it forks checks)."""
    for schema in SCHEMAS:
        for attribute in COMMON_ATTRIBUTES:
            for ifc_class in _classes_declaring(schema, attribute):
                if (place := _place_in_subclasses(schema, ifc_class, attribute)) is not None and place[0] == 1:
                    _text_or_null_in_subclasses(schema, ifc_class, place[1])


@functools.cache
def _classes_declaring(schema: str, attribute: str) -> tuple[str, ...]:
    """The classes ifctester's attribute facet asks by_type for, in its order: its own filter run against a stand-in
    that records them (it walks the schema's ~800 entity declarations, ~3 ms, on every call)."""
    recorder = _ClassRecorder(schema)
    ifctester_facet.Attribute(attribute).filter(recorder, None)
    return tuple(recorder.classes)


def _declared_place(declaration, attribute: str) -> tuple:
    """_attribute_place of an element of the class, read from the class's declaration: an element made to ask would
    take one of ifcopenshell's instance identities, the hashes of the elements of a model opened after it (and so the
    order of ifctester's IFC2X3 sets of elements)."""
    names = [declared.name() for declared in declaration.all_attributes()]
    if attribute in names:
        index = names.index(attribute)
        if declaration.derived()[index]:
            return DERIVED, -1, False
        return 1, index, declaration.argument_types()[index] != "LOGICAL"
    if any(inverse.name() == attribute for inverse in declaration.all_inverse_attributes()):
        return INVERSE, -1, False
    return 0, -1, False


@functools.cache
def _instantiable(schema: str, ifc_class: str) -> tuple:
    """The declarations of the classes an element of by_type(ifc_class) can be: the class and its subclasses that are
    not abstract."""
    found, declarations = [], [ifcopenshell.ifcopenshell_wrapper.schema_by_name(schema).declaration_by_name(ifc_class)]
    while declarations:
        declaration = declarations.pop()
        declarations.extend(declaration.subtypes())
        if not declaration.is_abstract():
            found.append(declaration)
    return tuple(found)


@functools.cache
def _place_in_subclasses(schema: str, ifc_class: str, attribute: str) -> tuple | None:
    """The attribute's place (_declared_place) in every class an element of by_type(ifc_class) can be when it is the
    same in all, else None; once per process."""
    places = {_declared_place(declaration, attribute) for declaration in _instantiable(schema, ifc_class)}
    return places.pop() if len(places) == 1 else None


@functools.cache
def _text_or_null_in_subclasses(schema: str, ifc_class: str, index: int) -> bool:
    """Whether the argument at the index is text or null (a STRING or an ENUMERATION) in every class an element of
    by_type(ifc_class) can be: no value of it then equals a text without being one (a typed value would)."""
    return all(declaration.argument_types()[index] in ("STRING", "ENUMERATION") for declaration in _instantiable(schema, ifc_class))


@contextlib.contextmanager
def wrappers_in_bulk():
    """While a check reads the model (the index's sweeps, and ids_engine.check_loaded around a whole check over the
    index), the wrappers ifcopenshell makes for its elements skip ifcopenshell's Python __setattr__: SWIG sets `this`
    on every new wrapper through it, which then calls object.__setattr__, and that call is half of what a wrapper
    costs (~0.35 of ~0.6 µs). Only for reading: nothing may set an attribute of an element meanwhile (it would land
    on the wrapper, not in the model). The method is ifcopenshell's again afterwards (also when a read fails), and
    nested uses leave it to the outer."""
    cls = ifcopenshell.entity_instance
    if cls.__dict__.get("__setattr__") is object.__setattr__:
        yield
        return
    own = cls.__dict__.get("__setattr__")
    cls.__setattr__ = object.__setattr__
    try:
        yield
    finally:
        if own is None:
            del cls.__setattr__
        else:
            cls.__setattr__ = own


def _first_by_name(named: list) -> dict:
    """name -> the first definition of that name in [(name, definition)]."""
    first: dict = {}
    for name, definition in named:
        first.setdefault(name, definition)
    return first


class _DecidedOnce(dict):
    """value -> decide(value), decided the first time the value is asked about."""

    def __init__(self, decide: Callable):
        super().__init__()
        self.decide = decide

    def __missing__(self, value):
        verdict = self[value] = self.decide(value)
        return verdict


class _ClassRecorder:
    """A model with no elements that notes the classes asked for."""

    def __init__(self, schema: str):
        self.schema_identifier = schema
        self.classes: list[str] = []

    def by_type(self, ifc_class: str, include_subtypes: bool = True) -> tuple:
        assert include_subtypes
        self.classes.append(ifc_class)
        return ()


def _item_content(item, value_matters: bool):
    """A property or quantity as a property facet reads it (see ModelIndex._content)."""
    if not value_matters and item.is_a() == "IfcPropertySingleValue":
        nominal, unit = item[2], item[3]
        value = nominal.wrappedValue if nominal is not None else None
        emptiness = value if value is None or (isinstance(value, str) and value in ("", "UNKNOWN")) else "value"
        return "single", item[0], nominal.is_a() if nominal is not None else None, emptiness, unit.id() if unit is not None else None
    return _step_text(item)


def _step_text(entity) -> str:
    """An entity's STEP text without its own id: '#12=IfcPropertySingleValue('A',$,IfcLabel('x'),$)' -> the part
    after '='; references to other entities stay as their ids."""
    text = str(entity)
    return text[text.index("=") + 1:]


class ModelIndex:
    """Keys and outcomes of one model (see the module's docstring); lives as long as one check of the model."""

    def __init__(self, ifc: ifcopenshell.file):
        self.ifc = ifc
        self.ifc2x3 = ifc.schema == "IFC2X3"
        self.askers: dict[int, Callable] = {}  # id(facet) -> element -> outcome (see asker)
        self.keyed_askers: dict[int, Callable] = {}  # id(facet) -> (element, its key) -> outcome (see asker)
        self.text_passes: dict[int, dict] = {}  # id(facet) -> {text: passes} (see _passing_attribute)
        self.facets: dict[int, object] = {}  # id(facet) -> facet (kept alive while its id is a key)
        self.pset_contexts: dict[int, tuple | None] = {}  # element id -> (type's [(name, content)], own [(name, content)])
        self.contents: dict[tuple, tuple] = {}  # (property set id, baseName, has a value) -> content key
        self.types: dict[int, object] = {}  # element id -> its type (ifcopenshell's get_type)
        self.type_psets: dict[int, tuple | None] = {}  # type id -> ([(name, set)], {name: first set})
        self.relations: dict[str, dict[int, list]] = {}  # relationship class -> {related element id: [relationships]}
        self.inverses: dict[tuple, bool] = {}  # (class, inverse attribute) -> the class has it
        self.subclasses: dict[tuple, bool] = {}  # (class, class) -> is_a
        self.definitions: dict[int, tuple] = {}  # property set id -> (class, Name, ((property name, property), ...))
        self.attribute_indexes: dict[tuple, tuple] = {}  # (class, attribute) -> (category, argument index)
        self.hops: dict[tuple, object] = {}  # (relation, element id) -> first related entity
        self.name_matches: dict[tuple, bool] = {}  # (id(facet), pset name) -> the facet's propertySet matches it
        self.candidates: dict[tuple, list] = {}
        self.own_psets: dict[int, list] | None = None  # element id -> [(name, property set)] (see _own_psets)
        self.pset_kinds: dict[str, str | None] = {}  # class -> how it has property sets (see _pset_kind)
        self.type_references: dict[int, tuple] = {}  # type id -> its own references
        self.type_materials: dict[int, object] = {}  # type id -> its own material (see _material)
        # attribute -> (its facet's candidates, the attribute of each, whether all are texts or null)
        self.candidate_values: dict[str, tuple] = {}

    # --- evaluation ---------------------------------------------------------------------------------------------

    def evaluate(self, specification) -> Evaluation:
        """ifctester's Specification.validate over the index (check_ifc_version and reset_status are the caller's)."""
        result = Evaluation()
        elements = None
        for facet in specification.applicability:
            elements = self.filter(facet, elements)
        elements = elements or []
        for facet in specification.applicability:  # each element asked each facet in turn until one fails, as ifctester does
            if not isinstance(facet, ifctester_facet.Entity):
                elements = self.passing(facet, elements)
        result.applicable = list(elements)  # never the candidates kept for the model
        requirements = list(enumerate(map(self.asker, specification.requirements))) if specification.maxOccurs != 0 else []
        failed_elements, failures = result.failed_elements, result.failures
        for element in elements:
            for index, ask in requirements:
                found = ask(element)
                if not found:
                    failed_elements.add(element)
                    failures.append((element, index, found))
        return result

    def filter(self, facet, elements):
        """ifctester's broadphase: the first facet's candidates (kept per model), then each further facet keeps the
        elements it passes."""
        if elements is not None:
            return self.passing(facet, elements)
        key = self._candidates_key(facet)
        if key is None:
            return facet.filter(self.ifc, None)
        if key not in self.candidates:
            with wrappers_in_bulk():
                self.candidates[key] = self._attribute_candidates(facet) if key[0] == "attribute" else facet.filter(self.ifc, None)
        return self.candidates[key]

    def _attribute_candidates(self, facet) -> list:
        """What ifctester's attribute facet filters a model to: the elements of each class declaring the attribute
        (subtypes included), in its order of the classes, which depends on the schema only (kept per process). When
        the attribute is text as it is in every class they can be (_place_in_subclasses), their values are read in
        the same sweep, by each declaring class's index of it, and kept with them (see _attribute_values)."""
        schema, candidates, values, text_or_null = self.ifc.schema_identifier, [], [], True
        for ifc_class in _classes_declaring(schema, facet.name):
            elements = self.ifc.by_type(ifc_class)
            if not elements:
                continue
            candidates += elements
            place = _place_in_subclasses(schema, ifc_class, facet.name)
            if values is not None and place is not None and place[0] == 1 and place[2]:
                values += map(ifcopenshell.entity_instance.get_argument, elements, itertools.repeat(place[1]))
                text_or_null = text_or_null and _text_or_null_in_subclasses(schema, ifc_class, place[1])
            else:
                values = None
        if values is not None:
            self.candidate_values[facet.name] = (candidates, values, text_or_null)
        return candidates

    def passing(self, facet, elements: list) -> list:
        """The elements the facet passes, in order."""
        ask = self.asker(facet)
        if ask is not facet and isinstance(facet, ifctester_facet.Attribute):
            return self._passing_attribute(facet, elements, ask)
        return [element for element in elements if ask(element)]

    def _passing_attribute(self, facet, elements: list, ask: Callable) -> list:
        """passing() of an attribute facet naming one attribute, in bulk (an attribute-only applicability asks it of
        tens of thousands of named entities): the attribute of each element (_attribute_values), whether a text
        passes decided once per text (by the facet's value's own matcher when it has one, see text_matcher in
        ids_engine), and the other values (empty, null, ...) once per key through ask's outcomes for the same keys
        (_attribute_key); values known to be texts or null (the candidates' names) each decided once as they come.
        When the attribute is not text as it is in some class (not a forward attribute, a LOGICAL), the elements are
        asked one at a time."""
        values, text_or_null = self._attribute_values(facet.name, elements)
        if values is None:
            return [element for element in elements if ask(element)]
        matches = functools.partial(_text_matches, facet)
        if facet.value and (matcher := getattr(facet.value, "text_matcher", None)) is not None:
            matches = matcher() or matches
        prohibited = facet.cardinality == "prohibited"
        keyed = self.keyed_askers[id(facet)]
        if text_or_null:
            def decide(value) -> bool:
                if value:
                    return matches(value) is not prohibited
                # null or "" of an attribute that is a forward one in every class: ifctester's facet finds it empty
                # whatever the class, so the first element holding it answers for all
                element = elements[values.index(value)]
                return bool(keyed(element, _attribute_value_key(element.is_a(), value, True)))

            return list(itertools.compress(elements, map(_DecidedOnce(decide).__getitem__, values)))
        passes = self.text_passes.setdefault(id(facet), {})  # text -> whether it passes
        for text in {value for value in values if value.__class__ is str}.difference(passes, ("",)):
            passes[text] = matches(text) is not prohibited
        passed = [passes.get(value) if value.__class__ is str else None for value in values]
        unknown = list(itertools.compress(itertools.count(), map(operator.is_, passed, itertools.repeat(None))))  # "", null, ...
        verdicts = {}  # key -> whether it passes (this sweep)
        if unknown:
            unknown_elements = list(map(elements.__getitem__, unknown))
            for position, element, ifc_class in zip(unknown, unknown_elements, map(ifcopenshell.entity_instance.is_a, unknown_elements)):
                value = values[position]
                key = (ifc_class, NULL_KEY) if value is None else _attribute_value_key(ifc_class, value, True)
                verdict = verdicts.get(key)  # never found for UNCACHED, which is never kept
                if verdict is None:
                    verdict = bool(keyed(element, key))
                    if key is not UNCACHED:
                        verdicts[key] = verdict
                passed[position] = verdict
        return list(itertools.compress(elements, passed))

    def _attribute_values(self, name: str, elements: list) -> tuple[list | None, bool]:
        """The attribute of each element: those read with the candidates when the elements are they, else each
        element's class and then its attribute by the class's index of it, in one sweep each; None when the
        attribute is not text as it is in one of their classes. And whether every value is known to be text or null
        (_text_or_null_in_subclasses; of the candidates only)."""
        found = self.candidate_values.get(name)
        if found is not None and found[0] is elements:
            return found[1:]
        classes = list(map(ifcopenshell.entity_instance.is_a, elements))
        indexes = {}
        for ifc_class, element in dict(zip(classes, elements)).items():
            category, index, takes_text = self._place_of(ifc_class, name, element)
            if category != 1 or not takes_text:
                return None, False
            indexes[ifc_class] = index
        return list(map(ifcopenshell.entity_instance.get_argument, elements, map(indexes.__getitem__, classes))), False

    def _candidates_key(self, facet):
        if isinstance(facet, ifctester_facet.Entity):
            if facet.predefinedType:
                return None
            if isinstance(facet.name, ifctester_facet.Restriction):  # the same constraints find the same classes
                return "entity", type(facet.name), facet.name.base, repr(facet.name.options)
            return ("entity", str(facet.name)) if isinstance(facet.name, str) else None
        if isinstance(facet, ifctester_facet.Attribute):
            return ("attribute", facet.name) if isinstance(facet.name, str) else None
        for kind in (ifctester_facet.Property, ifctester_facet.Classification, ifctester_facet.Material, ifctester_facet.PartOf):
            if isinstance(facet, kind):  # what their filter returns depends on the facet's class only (and the schema)
                return (kind.__name__,)
        return None

    def asker(self, facet) -> Callable:
        """element -> the facet's outcome: the outcome kept for the element's key, else the facet's own answer (kept
        for the key). One per facet, made once."""
        found = self.askers.get(id(facet))
        if found is None:
            key_of = self._key_function(facet)
            known: dict = {}
            text_outcome = functools.partial(_text_outcome, facet) if isinstance(facet, ifctester_facet.Attribute) else None

            def keyed(element, key):
                if key is UNCACHED:
                    return facet(element)
                outcome = known.get(key, UNCACHED)
                if outcome is UNCACHED:
                    outcome = known[key] = text_outcome(key) if text_outcome is not None and key.__class__ is str else facet(element)
                return outcome

            self.keyed_askers[id(facet)] = keyed
            found = self.askers[id(facet)] = facet if key_of is None else lambda element: keyed(element, key_of(element))
            self.facets[id(facet)] = facet  # its id stays its own while the index lives
        return found

    # --- keys ---------------------------------------------------------------------------------------------------

    def _key_function(self, facet) -> Callable | None:
        """element -> what the facet reads of it (UNCACHED: ask the facet), or None: always ask the facet."""
        if isinstance(facet, ifctester_facet.Property):
            return functools.partial(self._property_key, facet)
        if isinstance(facet, ifctester_facet.Attribute):
            return functools.partial(self._attribute_key, facet) if isinstance(facet.name, str) else None
        if isinstance(facet, ifctester_facet.Classification):
            return self._references
        if isinstance(facet, ifctester_facet.Material):
            return self._material
        if isinstance(facet, ifctester_facet.PartOf):
            return functools.partial(self._hop, facet)
        if isinstance(facet, ifctester_facet.Entity) and not facet.predefinedType and not self.ifc2x3:
            return ifcopenshell.entity_instance.is_a
        return None

    def _attribute_key(self, facet, element):
        """(class, value key); the text itself for non-empty text that ifctester cannot take for empty, whatever the
        class (see _text_outcome); (class, category) for an attribute that is not a forward one."""
        ifc_class = element.is_a()
        category, index, takes_text = self._place_of(ifc_class, facet.name, element)
        if category != 1:
            return ifc_class, category
        # element[index] without its bounds check: the index is the class's
        return _attribute_value_key(ifc_class, element.get_argument(index), takes_text)

    def _place_of(self, ifc_class: str, name: str, element) -> tuple:
        """_attribute_place of the class (of which the element is one), once per class."""
        where = self.attribute_indexes.get((ifc_class, name))
        if where is None:
            where = self.attribute_indexes[(ifc_class, name)] = _attribute_place(element, name)
        return where

    def _is(self, element, ifc_class: str) -> bool:
        """element.is_a(ifc_class), decided once per class (ifcopenshell takes ~10 times as long as a dict)."""
        key = (element.is_a(), ifc_class)
        found = self.subclasses.get(key)
        if found is None:
            found = self.subclasses[key] = element.is_a(ifc_class)
        return found

    def _has_inverse(self, element, inverse: str) -> bool:
        key = (element.is_a(), inverse)
        found = self.inverses.get(key)
        if found is None:
            found = self.inverses[key] = element.get_attribute_category(inverse) == INVERSE
        return found

    def _related(self, element, relation: str, inverse: str) -> list:
        """The relationships of a class (subtypes included) that relate the element, as its inverse attribute lists
        them: read by one pass over the relationships of the model, not per element (ifcopenshell keeps both the
        inverses and by_type in id order); none for an element whose class has no such inverse."""
        if not self._has_inverse(element, inverse):
            return []
        related = self.relations.get(relation)
        if related is None:
            related = self.relations[relation] = {}
            with wrappers_in_bulk():
                relationships = self._relationships(relation)
                # RelatedObjects / RelatedElements of each
                for relationship, elements in zip(relationships, map(ifcopenshell.entity_instance.get_argument, relationships, itertools.repeat(4))):
                    for element_id in map(ifcopenshell.entity_instance.id, elements or ()):
                        related.setdefault(element_id, []).append(relationship)
        return related.get(element.id(), [])

    def _relationships(self, relation: str) -> list:
        """The relationships of a class (subtypes included) in id order, the order of the inverses that list them."""
        relationships = self.ifc.by_type(relation)
        ids = list(map(ifcopenshell.entity_instance.id, relationships))
        if any(map(operator.gt, ids, ids[1:])):  # subtypes follow their supertype's relationships
            relationships = [relationship for _, relationship in sorted(zip(ids, relationships), key=operator.itemgetter(0))]
        return relationships

    def _own_psets(self) -> dict:
        """element id -> [(name, property set)] of the sets its IfcRelDefinesByProperties relate it to, in the order
        of its IsDefinedBy (the members of a set definition set in their order), read in one sweep over those
        relationships (once per model, when a property facet first asks)."""
        if self.own_psets is None:
            own: dict[int, list] = {}
            argument = ifcopenshell.entity_instance.get_argument
            with wrappers_in_bulk():
                relationships = self._relationships("IfcRelDefinesByProperties")
                # RelatingPropertyDefinition, RelatedObjects
                for definition, elements in zip(map(argument, relationships, itertools.repeat(5)), map(argument, relationships, itertools.repeat(4))):
                    members = definition.wrappedValue if self._is(definition, "IfcPropertySetDefinitionSet") else (definition,)
                    named = [(argument(member, 2), member) for member in members]  # (Name, the set)
                    for element_id in map(ifcopenshell.entity_instance.id, elements or ()):
                        if element_id in own:
                            own[element_id] += named
                        else:
                            own[element_id] = list(named)
            self.own_psets = own
        return self.own_psets

    def _references(self, element):
        """What ifcopenshell's get_references reads of an object: its type's references and its own, each in the
        order of the associations (the order its sets of references are built in), by which alone the classification
        facet decides; other elements (materials, references, ...) read theirs another way: asked directly."""
        if not self._is(element, "IfcRoot"):
            return UNCACHED
        element_type = self._type(element) if self._is(element, "IfcObject") else None
        return "references", self._type_references(element_type) if element_type is not None and element_type is not element else (), \
            self._own_references(element)

    def _own_references(self, element) -> tuple:
        return tuple(rel[5] for rel in self._related(element, "IfcRelAssociatesClassification", "HasAssociations"))  # RelatingClassification

    def _type_references(self, element_type) -> tuple:
        """A type's own references (_own_references), once per type."""
        found = self.type_references.get(element_type.id())
        if found is None:
            found = self.type_references[element_type.id()] = self._own_references(element_type)
        return found

    def _material(self, element):
        """What ifcopenshell's get_material (usages skipped) finds, by which alone the material facet decides: the
        material of the element's first material association (the set of a set usage: the walls of one layer set
        share it), else its type's (the type's own, once per type); None for none."""
        material = self._associated_material(element)
        if material is None:
            element_type = self._type(element)
            if element_type is not None and element_type is not element:
                type_id = element_type.id()
                material = self.type_materials.get(type_id, UNCACHED)
                if material is UNCACHED:
                    material = self.type_materials[type_id] = self._associated_material(element_type)
        return "material", material

    def _associated_material(self, element):
        """The material of the element's first material association, the set of a set usage; None for none."""
        own = self._related(element, "IfcRelAssociatesMaterial", "HasAssociations")
        if not own:
            return None
        material = own[0][5]  # RelatingMaterial
        if self._is(material, "IfcMaterialLayerSetUsage"):
            return material.ForLayerSet
        if not self.ifc2x3 and self._is(material, "IfcMaterialProfileSetUsage"):
            return material.ForProfileSet
        return material

    def _hop(self, facet, element):
        relation = facet.relation
        if relation == "IFCRELVOIDSELEMENT IFCRELFILLSELEMENT" or relation not in (
                None, "", "IFCRELAGGREGATES", "IFCRELASSIGNSTOGROUP", "IFCRELCONTAINEDINSPATIALSTRUCTURE", "IFCRELNESTS"):
            return UNCACHED
        key = (relation, element.id())
        found = self.hops.get(key, UNCACHED)
        if found is UNCACHED:
            found = self.hops[key] = self._first_hop(facet, relation, element)
        return relation, found

    def _first_hop(self, facet, relation, element):
        """The entity ifctester's PartOf facet reads first for this relation (all it reads next depends on it)."""
        if not relation:
            return facet.get_parent(element)
        if relation == "IFCRELAGGREGATES":
            return ifcopenshell.util.element.get_aggregate(element)
        if relation == "IFCRELCONTAINEDINSPATIALSTRUCTURE":  # get_container: the direct container, else the parent's
            contained = self._related(element, "IfcRelContainedInSpatialStructure", "ContainedInStructure")
            return contained[0][5] if contained else ifcopenshell.util.element.get_container(element)  # RelatingStructure
        if relation == "IFCRELNESTS":
            return ifcopenshell.util.element.get_nest(element)
        return next((rel.RelatingGroup for rel in getattr(element, "HasAssignments", []) or [] if rel.is_a("IfcRelAssignsToGroup")), None)

    def _property_key(self, facet, element):
        context = self._pset_context(element)
        if context is None:
            return UNCACHED
        type_psets, own_psets, type_first, own_first = context
        if isinstance(facet.propertySet, str):  # ifcopenshell's get_pset: the first of the name, the type's and its own
            name = facet.propertySet
            return name, self._content(type_first.get(name), facet), self._content(own_first.get(name), facet)
        names = [name for name in dict.fromkeys(name for name, _ in (*type_psets, *own_psets)) if self._name_matches(facet, name)]
        # ifcopenshell's get_psets: per name (type's first), every set of the name merged in order
        return tuple((name, tuple(self._content(definition, facet) for found, definition in type_psets if found == name),
                      tuple(self._content(definition, facet) for found, definition in own_psets if found == name)) for name in names)

    def _name_matches(self, facet, name: str) -> bool:
        key = (id(facet), name)
        found = self.name_matches.get(key)
        if found is None:
            found = self.name_matches[key] = bool(name == facet.propertySet)
        return found

    def _pset_context(self, element):
        """(the type's property sets, the element's own) as [(name, definition)] in ifcopenshell's order, and the
        first of each name of both (a material or profile definition: its extended property sets, no type), or None
        for an element whose property sets ifcopenshell reads another way (types, IFC2X3 materials)."""
        element_id = element.id()
        if element_id in self.pset_contexts:
            return self.pset_contexts[element_id]
        context = None
        kind = self._pset_kind(element)
        if kind == "extended":  # IFC4+: its own extended property sets, no type
            own = [(definition.Name, definition) for definition in (getattr(element, "HasProperties", None) or ())]
            context = ([], own, {}, _first_by_name(own))
        elif kind == "object":
            element_type = self._type(element)
            type_psets = self._type_psets(element_type) if element_type is not None else ([], {})
            if type_psets is not None:
                own = self._own_psets().get(element_id, [])
                context = (type_psets[0], own, type_psets[1], _first_by_name(own))
        self.pset_contexts[element_id] = context
        return context

    def _pset_kind(self, element) -> str | None:
        """How the element's class has its property sets (once per class): "extended" (a material or profile
        definition, IFC4+), "object" (through IsDefinedBy, and its type), None (read another way: types, IFC2X3
        materials and profiles, classes without IsDefinedBy)."""
        ifc_class = element.is_a()
        if ifc_class not in self.pset_kinds:
            kind = None
            if self._is(element, "IfcMaterialDefinition") or self._is(element, "IfcProfileDef"):
                kind = None if self.ifc2x3 else "extended"
            elif not (self._is(element, "IfcTypeObject") or (self.ifc2x3 and self._is(element, "IfcMaterial"))):
                kind = "object" if self._has_inverse(element, "IsDefinedBy") else None
            self.pset_kinds[ifc_class] = kind
        return self.pset_kinds[ifc_class]

    def _type_psets(self, element_type):
        """A type's property sets [(name, definition)] and the first of each name, once per type; None for a type
        that is not an IfcTypeObject (its occurrences' property sets are then asked about directly)."""
        type_id = element_type.id()
        if type_id not in self.type_psets:
            if self._is(element_type, "IfcTypeObject"):
                psets = [(definition[2], definition) for definition in (element_type.HasPropertySets or ())]
                self.type_psets[type_id] = (psets, _first_by_name(psets))
            else:
                self.type_psets[type_id] = None
        return self.type_psets[type_id]

    def _type(self, element):
        """ifcopenshell's get_type, once per element, without reading the file's schema each time."""
        element_id = element.id()
        found = self.types.get(element_id, UNCACHED)
        if found is UNCACHED:
            if self._is(element, "IfcTypeObject"):
                found = element
            else:  # IFC2X3: the first type relationship among IsDefinedBy
                typed = self._related(element, "IfcRelDefinesByType", "IsDefinedBy" if self.ifc2x3 else "IsTypedBy")
                found = typed[0][5] if typed else None  # RelatingType
            self.types[element_id] = found
        return found

    def _content(self, definition, facet) -> tuple | None:
        """A property set by what the property facet reads of it: its class and name and, of the properties (or
        quantities) it reads (those of the facet's baseName, all for a restricted baseName), the STEP text; without
        a value to compare, a single value only by its type, its unit and whether it is empty (null, '' or UNKNOWN),
        since the facet then reports no value. Any other kind of definition by its identity; None for none."""
        if definition is None:
            return None
        base_name = facet.baseName if isinstance(facet.baseName, str) else None
        key = (definition.id(), base_name, bool(facet.value))
        found = self.contents.get(key)
        if found is None:
            ifc_class, name, items = self._definition(definition)
            if items is None:
                found = ("definition", definition.id())
            else:
                found = (ifc_class, name, tuple(_item_content(item, bool(facet.value)) for found_name, item in items
                                                if base_name is None or found_name == base_name))
            self.contents[key] = found
        return found

    def _definition(self, definition) -> tuple:
        """A property definition as (class, Name, ((property name, property), ...)), read once for every facet that
        asks about it; the properties are None for a definition that is neither a property set nor a quantity set."""
        found = self.definitions.get(definition.id())
        if found is None:
            ifc_class = definition.is_a()
            if ifc_class == "IfcPropertySet":
                items = definition.HasProperties or ()
            elif ifc_class == "IfcElementQuantity":
                items = definition.Quantities or ()
            else:
                items = None
            found = self.definitions[definition.id()] = (
                ifc_class, definition.Name if items is not None else None, None if items is None else tuple((item[0], item) for item in items))
        return found
