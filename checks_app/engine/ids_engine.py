"""Checks an IFC model against IDS 1.0 documents with IfcOpenShell's ifctester, corrected where it disagrees with
the buildingSMART test cases, and turns the outcome into the API's result shape.

ifctester 0.9.0 agrees with the official outcome on 267 of the 287 test cases. The corrections wrap or subclass
ifctester's own classes (none of its code is copied), and are applied to a document after ifctester parsed it:
1. An optional attribute requirement passes when the attribute is null ($): optional means "if it has a value, the
   value must match" (ifctester fails such an element as "empty"; an empty string still fails): `Attribute`.
2. Real numbers in simple values match within the IDS tolerance |x - v| <= 1e-6 * |v| + 1e-6, computed exactly on
   the numbers as written (ifctester uses a relative tolerance only, so values near zero fail): `SimpleValue`.
3. Range bounds (xs:minInclusive ... xs:maxExclusive) of real numbers apply the same tolerance: an inclusive bound
   widens by it, an exclusive one narrows (ifctester compares exactly); enumerations of reals match within it:
   `Restriction`.
4. xs:pattern is matched by RE2 in linear time with XSD semantics (xsd_patterns), never by Python's backtracking
   `re` as ifctester does: `Restriction`.
The verdict of a specification is decided here from ifctester's applicable elements and requirement failures:
minOccurs <= applicable count <= maxOccurs (unbounded: no upper limit) and every applicable element meets every
requirement; with maxOccurs 0 (prohibited) the requirements are not checked and any applicable element fails it.
For IDS 1.0's three usages (required 1..unbounded, optional 0..unbounded, prohibited 0..0) that is the standard's
rule; other counts, which the XSD allows, are read as the counts they say.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Callable

import ifcopenshell
import ifcopenshell.util.placement
import numpy as np
import ifcopenshell.util.unit
from ifctester import facet as ifctester_facet
from ifctester import ids as ifctester_ids

from checks_app.engine.ids_index import Evaluation, ModelIndex, wrappers_in_bulk
from checks_app.engine.xsd_patterns import compile_xsd_pattern, compiled_pattern_matches, full_matcher

EPSILON = Decimal("0.000001")
BOUNDS = ("minInclusive", "minExclusive", "maxInclusive", "maxExclusive")
FAILURE_LIMIT = 5000  # failures kept per specification (all are counted)


# --- numbers as the IDS compares them ---------------------------------------------------------------------------


def _exact(number) -> Decimal:
    """The decimal a number was written as: text as it stands; a float by its repr(), the shortest text that
    reads back as the same float (so 0.999998 in an IFC is 0.999998, not 0.99999799999999996...)."""
    return Decimal(number.strip()) if isinstance(number, str) else Decimal(repr(float(number)))


def _tolerance(expected: Decimal) -> Decimal:
    return abs(expected) * EPSILON + EPSILON


def reals_equal(actual: float, expected) -> bool:
    try:
        found, wanted = _exact(actual), _exact(expected)
    except (InvalidOperation, ValueError, TypeError):
        return False
    if not (found.is_finite() and wanted.is_finite()):
        return found == wanted
    return abs(found - wanted) <= _tolerance(wanted)


def within_bound(actual: float, constraint: str, bound) -> bool:
    try:
        found, limit = _exact(actual), _exact(bound)
    except (InvalidOperation, ValueError, TypeError):
        return False
    slack = _tolerance(limit) if limit.is_finite() else 0
    if constraint == "minInclusive":
        return found >= limit - slack
    if constraint == "minExclusive":
        return found > limit + slack
    if constraint == "maxInclusive":
        return found <= limit + slack
    return found < limit - slack


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


class SimpleValue:
    """An ids:simpleValue of an attribute or property facet. ifctester compares a simple value given as text by
    casting it to the type of the model's value; this object compares the same way (it stands where the text
    stood, and Python asks it when the model's value cannot compare itself with it), except that reals match
    within the IDS tolerance."""

    def __init__(self, text: str):
        self.text = text

    def __eq__(self, other):
        if isinstance(other, str):
            return other == self.text
        if isinstance(other, float):
            return reals_equal(other, self.text)
        cast = ifctester_facet.cast_to_value(self.text, other)
        return cast is not None and other == cast

    __hash__ = None

    def text_matcher(self) -> Callable[[str], bool]:
        """text -> self == text, for many texts (ids_index)."""
        return self.text.__eq__

    def __bool__(self):
        return bool(self.text)

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"SimpleValue({self.text!r})"


class Restriction(ifctester_facet.Restriction):
    """xs:restriction with patterns matched by RE2 (compiled when the document is loaded: a pattern RE2 cannot run
    raises PatternUnsupported there) and the IDS tolerance for reals in bounds and enumerations; every other
    constraint is ifctester's."""

    def __init__(self, options=None, base="string"):
        super().__init__(options, base)
        for pattern in _as_list(self.options.get("pattern", [])):
            compile_xsd_pattern(pattern)

    def __eq__(self, other):
        patterns, patterns_only = self._patterns()
        if patterns:
            if not (isinstance(other, str) and all(compiled_pattern_matches(pattern, other) for pattern in patterns)):
                return False
            if patterns_only:  # nothing else to compare (ifctester's restriction of no constraint passes any text)
                return True
        if isinstance(other, float):
            for name in BOUNDS:
                if name in self.options and not all(within_bound(other, name, bound) for bound in _as_list(self.options[name])):
                    return False
            if "enumeration" in self.options and not any(reals_equal(other, option) for option in _as_list(self.options["enumeration"])):
                return False
            return self._rest(real=True) == other
        return self._rest(real=False) == other

    def _patterns(self) -> tuple[list, bool]:
        """The compiled patterns, and whether they are the only constraint (made once per restriction: a restriction
        of names is asked about every named entity of a model)."""
        found = self.__dict__.get("_compiled")
        if found is None:
            patterns = [compile_xsd_pattern(pattern) for pattern in _as_list(self.options.get("pattern", []))]
            found = self.__dict__["_compiled"] = (patterns, set(self.options) == {"pattern"})
        return found

    def text_matcher(self) -> Callable[[str], bool] | None:
        """text -> self == text, for many texts (ids_index), when patterns are the only constraint; else None."""
        patterns, patterns_only = self._patterns()
        if not (patterns and patterns_only):
            return None
        matchers = [full_matcher(pattern) for pattern in patterns]
        return matchers[0] if len(matchers) == 1 else lambda text: all(matches(text) for matches in matchers)

    def _rest(self, real: bool) -> ifctester_facet.Restriction:
        """ifctester's restriction of the constraints not decided here (made once per restriction)."""
        cache = self.__dict__.setdefault("_rests", {})
        if real not in cache:
            decided = ("pattern", *BOUNDS, "enumeration") if real else ("pattern",)
            cache[real] = ifctester_facet.Restriction({name: value for name, value in self.options.items() if name not in decided}, self.base)
        return cache[real]

    __hash__ = None

    def __repr__(self):  # ifctester's sentences show a restriction by its repr: in words, not as a Python dict
        return describe_value(self)

    __str__ = __repr__


class _ClassesInOrder:
    """A model as ifctester's entity facet looks it over: its class names (file.types()) in one order. ifcopenshell
    answers them in an order that changes from one process to the next, and ifctester's IFC2X3 broadphase for a
    restricted class name builds a set of elements in that order, so the order of the elements (and failures) of such
    a specification did too; sorted, it is the same in every process. Everything else is the model's."""

    def __init__(self, ifc: ifcopenshell.file):
        self.ifc = ifc

    def types(self) -> list[str]:
        return sorted(self.ifc.types())

    def __getattr__(self, name):
        return getattr(self.ifc, name)


class Entity(ifctester_facet.Entity):
    """ifctester's entity facet, looking over the model's classes in one order (_ClassesInOrder)."""

    def filter(self, ifc_file, elements=None):
        return super().filter(_ClassesInOrder(ifc_file) if elements is None else ifc_file, elements)


class Attribute(ifctester_facet.Attribute):
    """An optional attribute requirement passes when the attribute is null."""

    def __call__(self, inst, logger=None):
        result = super().__call__(inst, logger)
        reason = result.reason or {}
        if not result and self.cardinality == "optional" and reason.get("type") == "FALSEY" and reason.get("actual") is None:
            return ifctester_facet.AttributeResult(True)
        return result


class _KeepsFailures:
    """Mixed into a requirement facet: keeps the outcome (with its reason) of each element it fails, so the result
    can say what was found without asking the facet again."""

    def __call__(self, inst, logger=None):
        outcome = super().__call__(inst, logger)
        if not outcome:
            self.__dict__.setdefault("failed_outcomes", {})[inst] = outcome
        return outcome


@functools.cache
def _keeping_failures(cls: type) -> type:
    return type(cls.__name__, (_KeepsFailures, cls), {})


def _corrected(facet: ifctester_facet.Facet) -> ifctester_facet.Facet:
    for key in (parameter.lstrip("@") for parameter in facet.parameters):
        value = getattr(facet, key, None)
        if isinstance(value, ifctester_facet.Restriction) and not isinstance(value, Restriction):
            setattr(facet, key, Restriction(value.options, value.base))
    if isinstance(facet, (ifctester_facet.Attribute, ifctester_facet.Property)) and isinstance(facet.value, str):
        facet.value = SimpleValue(facet.value)
    if type(facet) is ifctester_facet.Attribute:
        facet = Attribute(facet.name, facet.value, facet.cardinality, facet.instructions)
    if type(facet) is ifctester_facet.Entity:
        facet.__class__ = Entity
    return facet


def load_ids(xml: str) -> ifctester_ids.Ids:
    """An IDS document (already valid against the XSD, see ids_schema) parsed by ifctester, with the corrections."""
    document = ifctester_ids.from_string(xml, validate=False)
    for specification in document.specifications:
        specification.applicability = [_corrected(facet) for facet in specification.applicability]
        specification.requirements = [_corrected(facet) for facet in specification.requirements]
        for facet in specification.requirements:
            facet.__class__ = _keeping_failures(type(facet))
    return document


# --- the result -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IdsSource:
    name: str
    xml: str


def _text(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.15g}"
    if isinstance(value, ifcopenshell.entity_instance):
        if not value.is_entity():
            return _text(value.wrappedValue)
        name = getattr(value, "Name", None)
        return f"{value.is_a()} #{value.id()}" + (f" {name!r}" if name else "")
    if isinstance(value, (list, tuple, set)):
        return ", ".join(_text(item) for item in value) or "none"
    return str(value)


def describe_value(value) -> str:
    """An IDS value (simple or restriction) in words."""
    if not isinstance(value, ifctester_facet.Restriction):
        return str(value)
    words = []
    options = value.options
    if "enumeration" in options:
        words.append("one of " + ", ".join(str(option) for option in _as_list(options["enumeration"])))
    for pattern in _as_list(options.get("pattern", [])):
        words.append(f"matching the pattern {pattern}")
    symbols = {"minInclusive": ">=", "minExclusive": ">", "maxInclusive": "<=", "maxExclusive": "<"}
    for name, symbol in symbols.items():
        for bound in _as_list(options.get(name, [])):
            words.append(f"{symbol} {bound}")
    for name, label in (("length", "exactly"), ("minLength", "at least"), ("maxLength", "at most")):
        if name in options:
            words.append(f"{label} {options[name]} characters long")
    for name in ("totalDigits", "fractionDigits"):
        if name in options:
            words.append(f"{name} {options[name]}")
    return " and ".join(words) or "any value"


def _valued(value) -> str:
    """ " = 5" for a simple value, " matching the pattern ..." / " one of ..." for a restriction, " with a value" for none."""
    if not value:
        return " with a value"
    return f" {describe_value(value)}" if isinstance(value, ifctester_facet.Restriction) else f" = {describe_value(value)}"


def describe_expected(facet: ifctester_facet.Facet) -> str:
    if isinstance(facet, ifctester_facet.Entity):
        text = describe_value(facet.name) + (f" with predefined type {describe_value(facet.predefinedType)}" if facet.predefinedType else "")
    elif isinstance(facet, ifctester_facet.Attribute):
        text = f"attribute {describe_value(facet.name)}" + _valued(facet.value)
    elif isinstance(facet, ifctester_facet.Property):
        text = f"{describe_value(facet.propertySet)}.{describe_value(facet.baseName)}" + _valued(facet.value)
        text += f" ({facet.dataType.upper()})" if facet.dataType else ""
    elif isinstance(facet, ifctester_facet.Classification):
        text = "a classification" + (f" {describe_value(facet.value)}" if facet.value else "") + (f" in {describe_value(facet.system)}" if facet.system else "")
    elif isinstance(facet, ifctester_facet.Material):
        text = "a material" + (f" {describe_value(facet.value)}" if facet.value else "")
    elif isinstance(facet, ifctester_facet.PartOf):
        text = f"part of {describe_value(facet.name)}" + (f" ({facet.relation})" if facet.relation else "")
    else:
        text = type(facet).__name__
    cardinality = getattr(facet, "cardinality", "required")
    if cardinality == "prohibited":
        return f"not {text}"
    if cardinality == "optional":
        return f"{text}, when present"
    return text


ABSENT = {
    ("Attribute", "NOVALUE"): "no such attribute",
    ("Property", "NOPSET"): "no such property set",
    ("Property", "NOVALUE"): "no value for the property",
    ("Classification", "NOVALUE"): "no classification",
    ("Material", "NOVALUE"): "no material",
    ("PartOf", "NOVALUE"): "no such relationship",
}


def describe_found(facet: ifctester_facet.Facet, reason: dict | None) -> str:
    kind = (reason or {}).get("type", "")
    if kind == "PROHIBITED":
        return "present, but prohibited"
    if kind == "INVALID":
        return "an attribute name the IFC schema does not have"
    if kind == "FALSEY":
        return f"empty ({_text(reason.get('actual'))})"
    if "actual" in (reason or {}):
        return _text(reason["actual"])
    for cls in type(facet).__mro__:
        if (cls.__name__, kind) in ABSENT:
            return ABSENT[(cls.__name__, kind)]
    return "does not meet the requirement"


def element_guid(element) -> str:
    return getattr(element, "GlobalId", None) or f"#{element.id()}"


def _element_fields(element, known: dict) -> dict:
    """guid, name and type of a failing element, read once per check (known: element id -> its fields)."""
    found = known.get(element.id())
    if found is None:
        found = known[element.id()] = {"guid": element_guid(element), "name": str(getattr(element, "Name", None) or ""), "type": element.is_a()}
    return found


class Locations:
    """Origins of element placements in world coordinates, in metres (for BCF viewpoints). Placements relative to
    the same storey share its matrix, computed once; so do the rotations of placements with the same axes."""

    def __init__(self, ifc: ifcopenshell.file):
        self.metres = ifcopenshell.util.unit.calculate_unit_scale(ifc)
        self.matrices: dict[int, object] = {}
        self.rotations: dict[tuple, object] = {}  # (Axis, RefDirection) ratios -> a2p's matrix at the origin
        self.indexes: dict[tuple, int] = {}  # (class, attribute) -> its argument index, -1 when not a forward one

    def _attribute(self, entity, name: str):
        """getattr(entity, name, None) (None for no entity), read by the attribute's index in the entity's class,
        found once per class (ifcopenshell's getattr looks it up again on every read)."""
        if entity is None:
            return None
        key = (entity.is_a(), name)
        index = self.indexes.get(key)
        if index is None:
            index = self.indexes[key] = entity.get_argument_index(name) if entity.get_attribute_category(name) == 1 else -1
        return entity.get_argument(index) if index >= 0 else getattr(entity, name, None)

    def _axis2placement(self, placement):
        """ifcopenshell's get_axis2placement: for a 3D placement at a point, its a2p matrix of the same axes made once
        (the rotation depends on the axes only) with the point's coordinates put in, as a2p puts them."""
        read = self._attribute
        location = read(placement, "Location") if placement.is_a() == "IfcAxis2Placement3D" else None
        if not (coordinates := read(location, "Coordinates")):
            return ifcopenshell.util.placement.get_axis2placement(placement)
        axis, reference = read(placement, "Axis"), read(placement, "RefDirection")
        axes = (read(axis, "DirectionRatios") if axis else (0, 0, 1), read(reference, "DirectionRatios") if reference else (1, 0, 0))
        rotation = self.rotations.get(axes)
        if rotation is None:
            rotation = self.rotations[axes] = ifcopenshell.util.placement.a2p((0.0, 0.0, 0.0), np.array(axes[0]), np.array(axes[1]))
        matrix = rotation.copy(order="K")  # a2p's transposed layout, so products are computed as before
        matrix[:-1, -1] = coordinates
        return matrix

    def _matrix(self, placement):
        if placement.id() not in self.matrices:
            if placement.is_a("IfcLocalPlacement"):
                local = self._axis2placement(self._attribute(placement, "RelativePlacement"))
                parent = self._attribute(placement, "PlacementRelTo")
                self.matrices[placement.id()] = self._matrix(parent) @ local if parent is not None else local
            else:
                self.matrices[placement.id()] = ifcopenshell.util.placement.get_local_placement(placement)
        return self.matrices[placement.id()]

    def of(self, element) -> list[float] | None:
        placement = self._attribute(element, "ObjectPlacement")
        if placement is None:
            return None
        try:
            matrix = self._matrix(placement)
        except Exception:  # noqa: BLE001 - an unusual placement only costs the element its camera position
            return None
        return [round(float(value) * self.metres, 4) for value in matrix[:3, 3]]


def _occurs(specification) -> tuple[int, int | None]:
    minimum = int(specification.minOccurs or 0)
    maximum = specification.maxOccurs
    return minimum, None if maximum in (None, "unbounded") else int(maximum)


def _verdict(applicable: int, minimum: int, maximum: int | None, failing: bool) -> tuple[bool, str]:
    if maximum == 0:
        return (applicable == 0, "" if applicable == 0 else f"{applicable} element(s) match a prohibited specification")
    if applicable < minimum:
        return False, f"{applicable} element(s) match the applicability, at least {minimum} required"
    if maximum is not None and applicable > maximum:
        return False, f"{applicable} element(s) match the applicability, at most {maximum} allowed"
    return (not failing, "" if not failing else "element(s) fail the requirements")


def _validated(ifc: ifcopenshell.file, specification) -> Evaluation:
    """ifctester's own Specification.validate, its outcome as an Evaluation (the engine before the index; kept as
    the reference the index is compared with)."""
    for facet in specification.requirements:
        facet.failed_outcomes = {}
    specification.validate(ifc)
    position = {element: index for index, element in enumerate(specification.applicable_entities)}
    failing = sorted(
        ((position.get(failure["element"], len(position)), facet_index, failure["element"], facet)
         for facet_index, facet in enumerate(specification.requirements) for failure in facet.failures),
        key=lambda item: item[:2],
    )
    return Evaluation(
        applicable=specification.applicable_entities, failed_elements=specification.failed_entities,
        failures=[(element, facet_index, facet.failed_outcomes[element] if element in facet.failed_outcomes else facet(element))
                  for _, facet_index, element, facet in failing],
    )


def check_specification(ifc: ifcopenshell.file, ids_name: str, specification, failure_limit: int = FAILURE_LIMIT,
                        index: ModelIndex | None = None, fields: dict | None = None) -> dict:
    """One specification's result; evaluated over the model's index when given (ids_index), else by ifctester.
    fields: the failing elements' fields already read in this check (element id -> fields), added to."""
    fields = {} if fields is None else fields
    specification.reset_status()
    specification.check_ifc_version(ifc)
    evaluation = index.evaluate(specification) if index is not None else _validated(ifc, specification)
    applicable = evaluation.applicable
    minimum, maximum = _occurs(specification)
    failures, count = [], 0
    requirements = specification.requirements
    applicability = [facet.to_string("applicability") for facet in specification.applicability]
    sentences = [facet.to_string("requirement", specification, facet) for facet in requirements]
    if maximum == 0:
        prohibited = "no element may match: " + "; ".join(applicability)
        count = len(applicable)
        failures = [
            {**_element_fields(element, fields), "requirement": prohibited, "found": "matches the applicability", "expected": "no such element"}
            for element in applicable[:failure_limit]
        ]
    else:
        # failures in the order of the applicable elements, then of the requirements (ifctester's evaluation order)
        position = {element: index for index, element in enumerate(applicable)}
        failing = sorted(((position.get(element, len(position)), facet_index, element, outcome)
                          for element, facet_index, outcome in evaluation.failures), key=lambda item: item[:2])
        count = len(failing)
        expected = [describe_expected(facet) for facet in requirements]
        found: dict[int, str] = {}  # id(outcome) -> words: outcomes are shared by the elements of one index key
        for _, facet_index, element, outcome in failing[:failure_limit]:
            if id(outcome) not in found:
                found[id(outcome)] = describe_found(requirements[facet_index], outcome.reason)
            failures.append({
                **_element_fields(element, fields),
                "requirement": sentences[facet_index],
                "found": found[id(outcome)],
                "expected": expected[facet_index],
            })
    passed, reason = _verdict(len(applicable), minimum, maximum, bool(count))
    return {
        "name": specification.name,
        "ids": ids_name,
        "identifier": specification.identifier or "",
        "description": specification.description or "",
        "instructions": specification.instructions or "",
        "ifcVersion": list(specification.ifcVersion) if isinstance(specification.ifcVersion, (list, tuple)) else [specification.ifcVersion],
        "appliesToSchema": bool(specification.is_ifc_version),
        "cardinality": specification.get_usage() if maximum in (0, None) else "counted",
        "minOccurs": minimum,
        "maxOccurs": "unbounded" if maximum is None else maximum,
        "applicability": applicability,
        "requirements": sentences,
        "applicable": len(applicable),
        "status": "pass" if passed else "fail",
        "reason": reason,
        "failedElements": len(applicable) if maximum == 0 else len(evaluation.failed_elements),
        "failureCount": count,
        "truncated": count > len(failures),
        "failures": failures,
    }


@contextlib.contextmanager
def project_units_looked_up_once(ifc: ifcopenshell.file):
    """While a check runs, the project's default unit of each type is looked up once for the model checked.
    ifctester's property facet asks for it for every property value it compares (get_property_unit ->
    ifcopenshell.util.unit.get_project_unit, which walks the unit assignment and the dimensions of its derived units
    each time: ~18 % of a check of example.ifc), and the cache ifcopenshell offers (`file.units`) is not seen
    there: ifctester passes `inst.file`, a new wrapper of the same model. Same answers (get_project_unit's own,
    kept per type), other models untouched; ifcopenshell's function is back afterwards.

        with project_units_looked_up_once(ifc):
            ifcopenshell.util.unit.get_project_unit(ifc, "LENGTHUNIT")  # looked up, then kept
    """
    module = ifcopenshell.util.unit
    original = module.get_project_unit
    found: dict[str, ifcopenshell.entity_instance | None] = {}

    def get_project_unit(ifc_file, unit_type, use_cache=False):
        if ifc_file != ifc:  # wrappers of one model compare equal
            return original(ifc_file, unit_type, use_cache)
        if unit_type not in found:
            found[unit_type] = original(ifc_file, unit_type, use_cache)
        return found[unit_type]

    module.get_project_unit = get_project_unit
    try:
        yield
    finally:
        module.get_project_unit = original


@contextlib.contextmanager
def _no_cycle_collection():
    """Python's cycle collector paused while specifications are evaluated: the evaluation allocates many small
    objects (keys, outcomes, wrappers) and makes no cycles worth collecting, and each full collection walks the
    whole index again (the longer the check, the larger it is). What was allocated meanwhile is then put with the
    oldest objects (freeze, unfreeze), or the first allocation after would walk all of it as the youngest generation
    (~0.5 s on the tower)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def check_model(
    ifc: ifcopenshell.file,
    sources: list[IdsSource],
    *,
    on_progress: Callable[[int, int], None] = lambda done, total: None,
    failure_limit: int = FAILURE_LIMIT,
    indexed: bool = True,
) -> dict:
    """Every specification of every IDS document, in order; on_progress(done, total) after each. indexed: over one
    ModelIndex of the model (ids_index); False: by ifctester's own validate (the reference, same result)."""
    documents = [(source, load_ids(source.xml)) for source in sources]
    return check_loaded(ifc, documents, on_progress=on_progress, failure_limit=failure_limit, indexed=indexed)


def check_loaded(
    ifc: ifcopenshell.file,
    documents: list[tuple[IdsSource, ifctester_ids.Ids]],
    *,
    on_progress: Callable[[int, int], None] = lambda done, total: None,
    failure_limit: int = FAILURE_LIMIT,
    indexed: bool = True,
) -> dict:
    """check_model of IDS documents already loaded (load_ids), each with its source."""
    total = sum(len(document.specifications) for _, document in documents)
    ifctester_facet.get_pset.cache_clear()  # keyed by element: never reuse values of another model
    ifctester_facet.get_psets.cache_clear()
    index = ModelIndex(ifc) if indexed else None
    specifications, fields, locations = [], {}, {}
    # nothing in a check sets an attribute of an element nor a unit of the project: every wrapper read over the index
    # is made in bulk, each unit looked up once (without the index, ifctester's own validate stays as it is, the
    # reference the index is compared with)
    with _no_cycle_collection(), contextlib.ExitStack() as indexed_only:
        if indexed:
            indexed_only.enter_context(wrappers_in_bulk())
            indexed_only.enter_context(project_units_looked_up_once(ifc))
        for source, document in documents:
            for specification in document.specifications:
                specifications.append(check_specification(ifc, source.name, specification, failure_limit, index, fields))
                on_progress(len(specifications), total)
        placements = Locations(ifc)
        for guid in sorted({failure["guid"] for spec in specifications for failure in spec["failures"]}):
            element = ifc.by_guid(guid) if not guid.startswith("#") else None
            if element is not None and (location := placements.of(element)) is not None:
                locations[guid] = location
    passed = sum(spec["status"] == "pass" for spec in specifications)
    return {
        "summary": {
            "specifications": len(specifications), "passed": passed, "failed": len(specifications) - passed,
            "failures": sum(spec["failureCount"] for spec in specifications),
        },
        "schema": ifc.schema_identifier,
        "ids": [{"name": source.name, "title": document.info.get("title", "")} for source, document in documents],
        "specifications": specifications,
        "locations": locations,  # GlobalId -> placement origin in metres, of failing elements (BCF cameras)
    }
