"""The IDS index (checks_app/engine/ids_index.py) gives the same result as the engine without it (ifctester's own
validate with the corrections), to the last failure's text: on the official test cases, on the samples and on a
generated tower with types, materials and classifications, against the example IDS files; and it evaluates a facet
once per distinct key, not once per element. The warm check process (checks_app/engine/zygote.py) serves several
checks without starting again."""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path

import ifcopenshell
import ifcopenshell.api.pset
import ifcopenshell.api.root
import ifcopenshell.guid
import ifcopenshell.ifcopenshell_wrapper
import ifcopenshell.util.element
import ifcopenshell.util.placement
import pytest
from ifctester import facet as ifctester_facet

from checks_app.engine import ids_engine, ids_index, runner
from checks_app.engine.ids_engine import IdsSource, check_model, load_ids
from checks_app.engine.ids_index import ModelIndex
from models_app.public import ConversionLimits
from tests.checks.test_conformance import CASES
from tests.helpers import sample

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [ROOT / "checks_app" / "examples" / name for name in ("review-basics.ids", "review-at-scale.ids")]
SAMPLES = ["IfcOpenHouse_IFC4.ifc", "duplex.ifc", "AC20-FZK-Haus.ifc", "example.ifc"]


def _both(ifc: ifcopenshell.file, sources: list[IdsSource]) -> tuple[dict, dict]:
    return check_model(ifc, sources, indexed=False), check_model(ifc, sources, indexed=True)


def test_the_official_cases_give_the_same_result_with_and_without_the_index():
    if not CASES:
        pytest.skip("the official IDS test cases are not available")
    differing = []
    for ids_path in CASES:
        ifc = ifcopenshell.open(str(ids_path.with_suffix(".ifc")))
        before, after = _both(ifc, [IdsSource(ids_path.name, ids_path.read_text(encoding="utf-8"))])
        if before != after:
            differing.append(f"{ids_path.parent.name}/{ids_path.name}")
    assert differing == []


@pytest.mark.parametrize("name", SAMPLES)
def test_the_samples_give_the_same_result_with_and_without_the_index(name):
    ifc = ifcopenshell.open(str(sample(name)))
    for ids_path in EXAMPLES:
        before, after = _both(ifc, [IdsSource(ids_path.name, ids_path.read_text(encoding="utf-8"))])
        assert before["summary"]["failures"] > 0  # the IDS says something about the model
        assert json.dumps(after, sort_keys=True) == json.dumps(before, sort_keys=True), ids_path.name


@pytest.fixture(scope="module")
def enriched_tower(tmp_path_factory) -> Path:
    """The benchmark's tower (bench/ids_check.py), small: types with property sets, layer sets, Uniclass references."""
    spec = importlib.util.spec_from_file_location("ids_check_bench", ROOT / "bench" / "ids_check.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench.build_tower(tmp_path_factory.mktemp("tower"), 3, 3)


def test_a_tower_with_types_materials_and_classifications_gives_the_same_result(enriched_tower):
    ifc = ifcopenshell.open(str(enriched_tower))
    sources = [IdsSource(path.name, path.read_text(encoding="utf-8")) for path in EXAMPLES]
    before, after = _both(ifc, sources)
    assert after == before
    by_name = {spec["name"]: spec for spec in after["specifications"]}
    # through the types: the brick type's fire rating fails its walls (untyped walls have none), the window type's
    # reference classifies its windows
    found = {failure["found"] for failure in by_name["Walls have a fire rating (from their type)"]["failures"]}
    assert found == {"REI30", "no value for the property"}
    assert by_name["Windows are classified (also through their type)"]["failedElements"] < by_name["Windows are classified (also through their type)"]["applicable"]
    assert by_name["No proxies"]["status"] == "fail"


def _walls(count: int, fire_ratings: list[str]) -> ifcopenshell.file:
    ifc = ifcopenshell.file(schema="IFC4")
    ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcProject", name="P")
    for index in range(count):
        wall = ifcopenshell.api.root.create_entity(ifc, ifc_class="IfcWall", name=f"W{index}")
        pset = ifcopenshell.api.pset.add_pset(ifc, product=wall, name="Pset_WallCommon")
        ifcopenshell.api.pset.edit_pset(ifc, pset=pset, properties={"FireRating": fire_ratings[index % len(fire_ratings)], "Reference": f"R{index}"})
    return ifc


FIRE_IDS = """<?xml version="1.0" encoding="utf-8"?>
<ids xmlns="http://standards.buildingsmart.org/IDS" xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <info><title>t</title></info>
  <specifications>
    <specification name="Walls are REI60" ifcVersion="IFC4">
      <applicability minOccurs="0" maxOccurs="unbounded"><entity><name><simpleValue>IFCWALL</simpleValue></name></entity></applicability>
      <requirements>
        <property><propertySet><simpleValue>Pset_WallCommon</simpleValue></propertySet><baseName><simpleValue>FireRating</simpleValue></baseName>
          <value><simpleValue>REI60</simpleValue></value></property>
        <property><propertySet><simpleValue>Pset_WallCommon</simpleValue></propertySet><baseName><simpleValue>Reference</simpleValue></baseName></property>
      </requirements>
    </specification>
  </specifications>
</ids>"""


def test_a_facet_runs_once_per_distinct_key_not_once_per_element(monkeypatch):
    """40 walls, each with its own property set: the fire rating (one of 2 values) is looked at twice, the
    reference (a value on each wall, but no value asked for: only its presence and type count) once."""
    calls = []
    original = ifctester_facet.Property.__call__
    monkeypatch.setattr(ifctester_facet.Property, "__call__", lambda self, inst, logger=None: calls.append(self.baseName) or original(self, inst, logger))
    ifc = _walls(40, ["REI60", "REI30"])
    specification = load_ids(FIRE_IDS).specifications[0]
    evaluation = ModelIndex(ifc).evaluate(specification)
    assert len(evaluation.applicable) == 40 and len(evaluation.failed_elements) == 20
    assert sorted(calls) == ["FireRating", "FireRating", "Reference"]
    assert {outcome.reason["actual"] for _, _, outcome in evaluation.failures} == {"REI30"}


def test_elements_that_differ_in_what_a_facet_reads_are_not_confused():
    """A value of another type (a label vs a text), an empty value and a missing property each get their own
    outcome, as without the index."""
    ifc = _walls(4, ["REI60"])
    walls = ifc.by_type("IfcWall")
    walls[1].IsDefinedBy[0].RelatingPropertyDefinition.HasProperties[0].NominalValue = ifc.createIfcText("REI60")
    walls[2].IsDefinedBy[0].RelatingPropertyDefinition.HasProperties[0].NominalValue = ifc.createIfcLabel("")
    ifcopenshell.api.pset.edit_pset(ifc, pset=walls[3].IsDefinedBy[0].RelatingPropertyDefinition, properties={"FireRating": None}, should_purge=True)
    before, after = _both(ifc, [IdsSource("fire.ids", FIRE_IDS.replace("<property><propertySet>", '<property dataType="IFCLABEL"><propertySet>', 1))])
    assert after == before
    assert [failure["found"] for failure in after["specifications"][0]["failures"]] == ["IfcText", "no value for the property", "no value for the property"]


def test_the_warm_check_process_serves_several_checks(tmp_path):
    limits = ConversionLimits()
    job = {"ids": [{"name": "fire.ids", "content": FIRE_IDS}], "overrides": None}
    runner.warm_up(limits)
    zygote = runner.check_zygote(limits)
    pid = zygote.process.pid
    for run in range(2):
        (tmp_path / str(run)).mkdir()
        outcome = runner.run_check_process(ifc_path=sample("IfcOpenHouse_IFC4.ifc"), job=job, work_dir=tmp_path / str(run), timeout_seconds=120,
                                           limits=limits, on_progress=lambda *_: None)
        assert outcome.ok, outcome.error
        assert json.loads((tmp_path / str(run) / runner.RESULT_FILE).read_text())["summary"]["specifications"] == 1
    assert zygote.alive and zygote.process.pid == pid  # not started again


def test_a_check_past_its_time_limit_is_stopped_and_the_zygote_serves_the_next(tmp_path):
    limits = ConversionLimits()
    job = {"ids": [{"name": "fire.ids", "content": FIRE_IDS}], "overrides": None}
    (tmp_path / "slow").mkdir()  # reading duplex alone takes longer than 20 ms
    slow = runner.run_check_process(ifc_path=sample("duplex.ifc"), job=job, work_dir=tmp_path / "slow", timeout_seconds=0.02, limits=limits,
                                    on_progress=lambda *_: None)
    assert not slow.ok and "time limit" in slow.error and slow.repeatable
    (tmp_path / "next").mkdir()
    following = runner.run_check_process(ifc_path=sample("IfcOpenHouse_IFC4.ifc"), job=job, work_dir=tmp_path / "next", timeout_seconds=120,
                                         limits=limits, on_progress=lambda *_: None)
    assert following.ok, following.error


def test_a_check_whose_time_limit_passes_while_the_zygote_forks_ends_as_timed_out(tmp_path, monkeypatch):
    """On a loaded machine the limit may pass before the zygote says it forked: the check ends as timed out at once
    (its output's readers reach the end of pipes whose ends the worker held too)."""
    limits = ConversionLimits()
    runner.warm_up(limits)
    runner.discard_spare(limits)  # the check forks its own child (a spare made ahead was forked before the limit ran)
    monkeypatch.setattr(runner.CheckZygote, "fork", lambda self, job, fds, deadline: (_ for _ in ()).throw(runner._ChildTimeout()))
    job = {"ids": [{"name": "fire.ids", "content": FIRE_IDS}], "overrides": None}
    outcomes = []
    run = threading.Thread(target=lambda: outcomes.append(runner.run_check_process(
        ifc_path=sample("duplex.ifc"), job=job, work_dir=tmp_path, timeout_seconds=120, limits=limits, on_progress=lambda *_: None)), daemon=True)
    run.start()
    run.join(timeout=60)  # a guard against the hang, not a measure of speed
    assert not run.is_alive(), "the check waited for its output after the time limit"
    assert not outcomes[0].ok and "time limit" in outcomes[0].error and outcomes[0].repeatable


def _out_of_order(schema: str) -> ifcopenshell.file:
    """Two walls related by property, type, material, classification and containment relationships whose ids are not
    in file order (#90 before #50), IFC2X3 mixing its type relationship into IsDefinedBy."""
    data = [
        "#1=IFCWALL('1aaaaaaaaaaaaaaaaaaaaa',$,$,$,$,$,$,$" + (",$);" if schema == "IFC4" else ");"),
        "#2=IFCWALL('2aaaaaaaaaaaaaaaaaaaaa',$,$,$,$,$,$,$" + (",$);" if schema == "IFC4" else ");"),
        *(f"#{n}=IFCPROPERTYSET('{n}aaaaaaaaaaaaaaaaaaaa',$,'P{n}',$,());" for n in (3, 4, 5)),
        "#6=IFCWALLTYPE('6aaaaaaaaaaaaaaaaaaaaa',$,'T',$,$,$,$,$,$" + (",.SOLIDWALL.);" if schema == "IFC4" else ",.STANDARD.);"),
        "#7=IFCMATERIAL('M1'" + (",$,$);" if schema == "IFC4" else ");"), "#8=IFCMATERIAL('M2'" + (",$,$);" if schema == "IFC4" else ");"),
        "#9=IFCBUILDINGSTOREY('9aaaaaaaaaaaaaaaaaaaaa',$,'S',$,$,$,$,$,.ELEMENT.,$);",
        "#90=IFCRELDEFINESBYPROPERTIES('0aaaaaaaaaaaaaaaaaaaaa',$,$,$,(#1,#2),#3);",
        "#50=IFCRELDEFINESBYPROPERTIES('0aaaaaaaaaaaaaaaaaaaab',$,$,$,(#2,#1),#4);",
        "#95=IFCRELDEFINESBYTYPE('0aaaaaaaaaaaaaaaaaaaac',$,$,$,(#1),#6);",
        "#70=IFCRELDEFINESBYPROPERTIES('0aaaaaaaaaaaaaaaaaaaad',$,$,$,(#1),#5);",
        "#80=IFCRELASSOCIATESMATERIAL('0aaaaaaaaaaaaaaaaaaaae',$,$,$,(#1,#2),#8);",
        "#60=IFCRELASSOCIATESMATERIAL('0aaaaaaaaaaaaaaaaaaaaf',$,$,$,(#1),#7);",
        "#85=IFCRELCONTAINEDINSPATIALSTRUCTURE('0aaaaaaaaaaaaaaaaaaaag',$,$,$,(#2,#1),#9);",
    ]
    header = f"ISO-10303-21;\nHEADER;\nFILE_DESCRIPTION((''),'2;1');\nFILE_NAME('','',(''),(''),'','','');\nFILE_SCHEMA(('{schema}'));\nENDSEC;\nDATA;\n"
    return ifcopenshell.file.from_string(header + "\n".join(data) + "\nENDSEC;\nEND-ISO-10303-21;\n")


RELATIONS = [("IfcRelDefinesByProperties", "IsDefinedBy"), ("IfcRelDefinesByType", "IsTypedBy"), ("IfcRelAssociatesMaterial", "HasAssociations"),
             ("IfcRelAssociatesClassification", "HasAssociations"), ("IfcRelContainedInSpatialStructure", "ContainedInStructure")]


@pytest.mark.parametrize("model", ["IFC4", "IFC2X3", *SAMPLES])
def test_relationships_read_once_for_the_model_are_each_elements_inverses_in_their_order(model):
    ifc = _out_of_order(model) if model.startswith("IFC") else ifcopenshell.open(str(sample(model)))
    index = ModelIndex(ifc)
    compared = 0
    for element in ifc.by_type("IfcObjectDefinition"):
        for relation, inverse in RELATIONS:
            if ifc.schema == "IFC2X3" and inverse == "IsTypedBy":
                inverse = "IsDefinedBy"
            expected = [rel for rel in getattr(element, inverse, None) or () if rel.is_a(relation)]
            assert index._related(element, relation, inverse) == expected, (element, relation)
            compared += len(expected)
        if index._has_inverse(element, "IsDefinedBy"):  # its own property sets, read in one sweep (_own_psets)
            definitions = [rel.RelatingPropertyDefinition for rel in element.IsDefinedBy if rel.is_a("IfcRelDefinesByProperties")]
            members = [member for definition in definitions
                       for member in (definition.wrappedValue if definition.is_a("IfcPropertySetDefinitionSet") else (definition,))]
            assert index._own_psets().get(element.id(), []) == [(member.Name, member) for member in members], element
    assert compared > 0
    if model.startswith("IFC"):
        wall = ifc.by_id(1)
        assert [rel.id() for rel in index._related(wall, "IfcRelDefinesByProperties", "IsDefinedBy")] == [50, 70, 90]
        assert index._type(wall) == ifcopenshell.util.element.get_type(wall) == ifc.by_id(6)


def test_walls_of_one_layer_set_share_one_material_outcome(monkeypatch):
    """Each wall has its own layer set usage of one layer set: ifctester's material facet reads the set (usages
    skipped), so it runs once for the 10 walls, with the same result as without the index."""
    ifc = _walls(10, ["REI60"])
    layer_set = ifc.createIfcMaterialLayerSet([ifc.createIfcMaterialLayer(ifc.createIfcMaterial("Concrete"), 0.2)], "C200")
    for number, wall in enumerate(ifc.by_type("IfcWall")):
        usage = ifc.createIfcMaterialLayerSetUsage(layer_set, "AXIS2", "POSITIVE", 0.0)
        ifc.createIfcRelAssociatesMaterial(ifcopenshell.guid.new(), None, None, None, [wall], usage if number else layer_set)
    ids = FIRE_IDS.replace('<property><propertySet>', '<material><value><simpleValue>Brick</simpleValue></value></material><property><propertySet>', 1)
    calls = []
    original = ifctester_facet.Material.__call__
    monkeypatch.setattr(ifctester_facet.Material, "__call__", lambda self, inst, logger=None: calls.append(inst) or original(self, inst, logger))
    evaluation = ModelIndex(ifc).evaluate(load_ids(ids).specifications[0])
    assert len(calls) == 1 and len(evaluation.failed_elements) == 10
    before, after = _both(ifc, [IdsSource("material.ids", ids)])
    assert after == before


def test_an_attribute_facet_answers_text_as_ifctester_does():
    """Outcomes worked out from the text (ids_index._text_outcome) against the facet's own answers: values to
    compare or none, required, optional and prohibited, empty and missing names, and a LOGICAL attribute whose
    UNKNOWN ifctester takes for empty."""
    ifc = _walls(3, ["REI60"])
    walls = ifc.by_type("IfcWall")
    walls[1].Name, walls[2].Name = "", None
    curve = ifc.createIfcBSplineCurveWithKnots(1, [ifc.createIfcCartesianPoint((0.0, 0.0)), ifc.createIfcCartesianPoint((1.0, 0.0))], "UNSPECIFIED",
                                               "UNKNOWN", False, [2, 2], [0.0, 1.0], "UNSPECIFIED")
    elements = [*walls, ifc.by_type("IfcProject")[0], curve]
    facets = []
    for name, value in (("Name", None), ("Name", "W0"), ("Name", "W1"), ("ClosedCurve", None), ("ClosedCurve", "UNKNOWN")):
        for cardinality in ("required", "optional", "prohibited"):
            facets.append(ifctester_facet.Attribute(name, value, cardinality))
            facets.append(ifctester_facet.Attribute(name, ifctester_facet.Restriction({"pattern": "W[0-9]"}), cardinality))
    corrected = [ids_engine._corrected(facet) for facet in facets]  # as load_ids corrects a document's facets
    index = ModelIndex(ifc)
    for facet in corrected:
        ask = index.asker(facet)
        for element in elements:
            mine, theirs = ask(element), facet(element)
            assert (bool(mine), mine.reason) == (bool(theirs), theirs.reason), (facet.name, facet.value, facet.cardinality, element)


def test_an_attribute_facet_passes_in_bulk_the_elements_it_passes_one_by_one():
    """ModelIndex.passing reads an attribute of many elements in one sweep (ids_index._passing_attribute): the same
    elements in the same order as the facet's own answers, for text, empty, null and LOGICAL values, a class without
    the attribute and the named entities of a sample."""
    ifc = _walls(3, ["REI60"])
    walls = ifc.by_type("IfcWall")
    walls[1].Name, walls[2].Name = "", None
    curve = ifc.createIfcBSplineCurveWithKnots(1, [ifc.createIfcCartesianPoint((0.0, 0.0)), ifc.createIfcCartesianPoint((1.0, 0.0))], "UNSPECIFIED",
                                               "UNKNOWN", False, [2, 2], [0.0, 1.0], "UNSPECIFIED")
    models = [(ifc, [*walls, ifc.by_type("IfcProject")[0], walls[0], curve, walls[2]]), (ifc, [*walls, *walls]), (ifc, [curve, curve])]
    duplex = ifcopenshell.open(str(sample("duplex.ifc")))
    models.append((duplex, ModelIndex(duplex).filter(ifctester_facet.Attribute("Name"), None)))
    for model, elements in models:
        for name, value in (("Name", None), ("Name", "W0"), ("ClosedCurve", None), ("ClosedCurve", "UNKNOWN")):
            for cardinality in ("required", "optional", "prohibited"):
                for facet in (ifctester_facet.Attribute(name, value, cardinality),
                              ifctester_facet.Attribute(name, ifctester_facet.Restriction({"pattern": "(W|Window )[0-9].*"}), cardinality)):
                    facet = ids_engine._corrected(facet)
                    expected = [element for element in elements if facet(element)]
                    index = ModelIndex(model)
                    assert index.passing(facet, elements) == expected, (name, value, cardinality)
                    assert index.passing(facet, elements) == expected  # again, from the outcomes kept
    assert any(index.passing(ids_engine._corrected(ifctester_facet.Attribute("Name", ifctester_facet.Restriction({"pattern": "Window .*"}))),
                             elements) for model, elements in models[2:])


def test_placements_are_located_as_ifcopenshell_places_them():
    """Locations computes a rotation once per pair of axes; each matrix is ifcopenshell's, to the bit."""
    for name in SAMPLES:
        ifc = ifcopenshell.open(str(sample(name)))
        locations = ids_engine.Locations(ifc)
        for placement in ifc.by_type("IfcLocalPlacement"):
            expected = ifcopenshell.util.placement.get_axis2placement(placement.RelativePlacement)
            found = locations._axis2placement(placement.RelativePlacement)
            assert found.tobytes(order="A") == expected.tobytes(order="A") and found.strides == expected.strides, placement
        for product in ifc.by_type("IfcProduct"):  # attributes read by their index: the origin of ifcopenshell's matrix
            placement = product.ObjectPlacement
            expected = ifcopenshell.util.placement.get_local_placement(placement) if placement is not None else None
            assert locations.of(product) == (None if expected is None else [round(float(value) * locations.metres, 4) for value in expected[:3, 3]])


class _TypesReversed:
    """A model whose file.types() answers in another order (ifcopenshell's changes from one process to the next)."""

    def __init__(self, ifc):
        self.ifc = ifc

    def types(self):
        return list(reversed(self.ifc.types()))

    def __getattr__(self, name):
        return getattr(self.ifc, name)


@pytest.mark.parametrize("schema", ["IFC4", "IFC2X3"])
def test_an_entity_facet_finds_the_elements_of_several_classes_in_one_order(schema):
    ifc = ifcopenshell.file(schema=schema)
    for index in range(6):
        ifc.create_entity("IfcWall" if index % 2 else "IfcWallStandardCase", GlobalId=ifcopenshell.guid.new(), Name=f"W{index}")
    ifc.create_entity("IfcSlab", GlobalId=ifcopenshell.guid.new(), Name="S")
    ids = FIRE_IDS.replace("<simpleValue>IFCWALL</simpleValue>",
                           '<xs:restriction base="xs:string"><xs:enumeration value="IFCWALL"/><xs:enumeration value="IFCWALLSTANDARDCASE"/></xs:restriction>')
    facet = load_ids(ids).specifications[0].applicability[0]
    found = [element.id() for element in facet.filter(ifc, None)]
    assert len(found) == 6
    assert [element.id() for element in facet.filter(_TypesReversed(ifc), None)] == found
    if schema == "IFC4":  # ifctester's own facet follows the order of file.types()
        theirs = ifctester_facet.Entity(facet.name)
        assert [e.id() for e in theirs.filter(ifc, None)] != [e.id() for e in theirs.filter(_TypesReversed(ifc), None)]


@pytest.mark.parametrize("name", ["duplex.ifc", "AC20-FZK-Haus.ifc"])
def test_an_attribute_facet_passes_in_bulk_the_candidates_it_read_with_their_values(name):
    """The candidates of an attribute-only applicability are read with the attribute of each (by each declaring
    class's index of it, see ids_index._place_in_subclasses) and passed in bulk: the same elements in the same order as
    the facet's own answers, for text, null, enumerations and a restriction, required, optional and prohibited."""
    ifc = ifcopenshell.open(str(sample(name)))
    checked = 0
    for attribute, value in (("Name", None), ("Name", ifctester_facet.Restriction({"pattern": "Window .*|.*[Ww]all.*"})), ("Description", None),
                             ("ObjectType", "Wall"), ("Tag", ifctester_facet.Restriction({"pattern": "[0-9]+"})), ("PredefinedType", "NOTDEFINED"),
                             ("GlobalId", ifctester_facet.Restriction({"pattern": "[0-9A-Za-z_$]{22}"}))):
        for cardinality in ("required", "optional", "prohibited"):
            facet = ids_engine._corrected(ifctester_facet.Attribute(attribute, value, cardinality))
            index = ModelIndex(ifc)
            candidates = index.filter(facet, None)
            assert attribute not in index.candidate_values or index.candidate_values[attribute][0] is candidates
            checked += attribute in index.candidate_values
            expected = [element for element in candidates if facet(element)]
            assert index.passing(facet, candidates) == expected, (attribute, value, cardinality)
            assert index.passing(facet, candidates) == expected  # again, from the outcomes kept
    assert checked >= 15  # the attributes read with the candidates (not one by one)


def test_an_attributes_place_read_from_the_schema_is_the_one_an_element_of_the_class_answers():
    """ids_index._declared_place (no element made) against ids_index._attribute_place of an element of each class of
    each schema, for every attribute of the class (forward, derived, inverse) and a name it does not have."""
    differing = []
    for schema in ids_index.SCHEMAS:
        for declaration in ifcopenshell.ifcopenshell_wrapper.schema_by_name(schema).entities():
            if declaration.is_abstract():
                continue
            element = ifcopenshell.create_entity(declaration.name(), schema=schema)
            names = {attribute.name() for attribute in (*declaration.all_attributes(), *declaration.all_inverse_attributes())}
            for attribute in sorted(names | {"Name", "NoSuchAttribute"}):
                if ids_index._declared_place(declaration, attribute) != ids_index._attribute_place(element, attribute):
                    differing.append((schema, declaration.name(), attribute))
    assert differing == []


def test_a_values_text_matcher_answers_as_the_value_compares():
    """text_matcher of a simple value and of a restriction of patterns (RE2's match without pyre2's wrapper, see
    xsd_patterns.full_matcher) against the value's own comparison; a restriction of other constraints has none."""
    texts = ["Window 1", "Window ", "window 1", "Window 1\n", "\nWindow 1", "Window ü€𝄞", "Window \ud800", "", "W", "Wall 12", "12"]
    values = [ids_engine.SimpleValue("Window 1"), ids_engine.Restriction({"pattern": "Window .*"}),
              ids_engine.Restriction({"pattern": ["Window .*", ".*[0-9]"]}), ids_engine.Restriction({"pattern": "[\\w ]+"}),
              ids_engine.Restriction({"pattern": "(W|Wa)[a-z]*\\s?\\d*"})]
    for value in values:
        matches = value.text_matcher()
        assert [matches(text) for text in texts] == [value == text for text in texts], value
    assert ids_engine.Restriction({"pattern": "W.*", "maxLength": "3"}).text_matcher() is None
    assert ids_engine.Restriction({"enumeration": ["W"]}).text_matcher() is None


@pytest.mark.parametrize("name", SAMPLES)
def test_material_and_classification_facets_answer_by_what_they_find_as_one_by_one(name):
    """The material facet keyed by the material ifcopenshell's get_material finds, the classification facet by the
    type's references and the element's own: each object's outcome is the facet's own answer about it."""
    ifc = ifcopenshell.open(str(sample(name)))
    facets = [ifctester_facet.Material(), ifctester_facet.Material("Concrete"), ifctester_facet.Material(cardinality="prohibited"),
              ifctester_facet.Classification(), ifctester_facet.Classification(system="Uniclass 2015"),
              ifctester_facet.Classification(value=ifctester_facet.Restriction({"pattern": "EF_.*"}), cardinality="optional")]
    index = ModelIndex(ifc)
    elements = ifc.by_type("IfcObjectDefinition")
    for facet in map(ids_engine._corrected, facets):
        ask = index.asker(facet)
        for element in elements:
            mine, theirs = ask(element), facet(element)
            assert (bool(mine), mine.reason) == (bool(theirs), theirs.reason), (facet, element)
        assert len(index.keyed_askers) and len({index._key_function(facet)(element) for element in elements}) < len(elements) / 3


def test_a_pattern_matched_for_many_texts_answers_as_pyre2_does():
    """xsd_patterns.full_matcher (RE2's match without pyre2's wrapper, texts outside RE2's range of possible matches
    not matched at all) against compiled_pattern_matches, for patterns of several shapes and the names of a sample
    with texts at and around the bounds."""
    from checks_app.engine.xsd_patterns import compile_xsd_pattern, compiled_pattern_matches, full_matcher

    ifc = ifcopenshell.open(str(sample("AC20-FZK-Haus.ifc")))
    texts = {element.Name for element in ModelIndex(ifc).filter(ifctester_facet.Attribute("Name"), None) if isinstance(element.Name, str)}
    texts |= {"", "W", "Window", "Window ", "Window 1", "Window\u00a0", "Window \U0010ffff", "Wall a 0 L1", "Wall z 9 L9", "Wall z{", "Pset_Common",
              "Pset_WallCommon", "Pset_\x00Common", "\U0010ffff", "\x00", "zzzzzzzzzzzzzzzzzzzzzz", "$$$$$$$$$$$$$$$$$$$$$$", "ü" * 70, "a\ud800"}
    patterns = ["Window .*", "[A-Z].*", "Wall [a-z]+ [0-9]+ L[0-9]+", ".*Window", "Pset_.*Common", "(W|Window )[0-9].*", "[0-9A-Za-z_$]{22}",
                "a*", "\\p{IsBasicLatin}+", "[^a]*", "\\d{3}", "Window|Wall|", "ü{64,}", ".{0,3}"]
    matching = 0
    for pattern in patterns:
        compiled = compile_xsd_pattern(pattern)
        matches = full_matcher(compiled)
        expected = {text for text in texts if compiled_pattern_matches(compiled, text)}
        assert {text for text in texts if matches(text)} == expected, pattern
        matching += bool(expected)
    assert matching >= 10


def test_wrappers_made_in_bulk_are_ifcopenshells_and_its_setattr_is_back_afterwards():
    """ids_index.wrappers_in_bulk: elements read meanwhile are the same elements; afterwards (also after an error
    and after a nested use) setting an attribute sets the IFC attribute again."""
    ifc = _walls(3, ["REI60"])
    own = ifcopenshell.entity_instance.__dict__.get("__setattr__")
    with ids_index.wrappers_in_bulk():
        with ids_index.wrappers_in_bulk():
            walls = ifc.by_type("IfcWall")
        assert ifcopenshell.entity_instance.__dict__.get("__setattr__") is object.__setattr__
    assert ifcopenshell.entity_instance.__dict__.get("__setattr__") is own
    with pytest.raises(RuntimeError), ids_index.wrappers_in_bulk():
        ifc.by_type("IfcNoSuchClass")
    assert ifcopenshell.entity_instance.__dict__.get("__setattr__") is own
    assert [wall.id() for wall in walls] == [wall.id() for wall in ifc.by_type("IfcWall")] and walls[0] == ifc.by_type("IfcWall")[0]
    walls[0].Name = "Renamed"
    assert ifc.by_type("IfcWall")[0].Name == "Renamed"
    with pytest.raises(RuntimeError):  # ifcopenshell's own answer (a plain setattr would keep it on the wrapper)
        walls[0].NoSuchAttribute = 1


def test_a_check_looks_each_project_unit_up_once_for_its_model(monkeypatch):
    import ifcopenshell.util.unit as unit

    model, other = ifcopenshell.open(str(sample("example.ifc"))), ifcopenshell.open(str(sample("duplex.ifc")))
    walks = []
    walk = unit.get_unit_assignment
    monkeypatch.setattr(unit, "get_unit_assignment", lambda ifc_file: walks.append(ifc_file) or walk(ifc_file))
    expected = unit.get_project_unit(model, "LENGTHUNIT")
    original = unit.get_project_unit
    walks.clear()
    with ids_engine.project_units_looked_up_once(model):
        wall = model.by_type("IfcWall")[0]
        assert unit.get_project_unit(wall.file, "LENGTHUNIT") == expected  # the wrapper ifctester passes
        assert unit.get_project_unit(model, "LENGTHUNIT") == expected
        assert len(walks) == 1
        unit.get_project_unit(other, "LENGTHUNIT")
        unit.get_project_unit(other, "LENGTHUNIT")
        assert len(walks) == 3  # another model is looked up as before
    assert unit.get_project_unit is original
