"""IDS xs:pattern matching: XSD regular expressions translated for RE2 (linear time) with XSD's semantics, a hostile
pattern that pins Python's backtracking `re` decided at once by the real check child, and patterns RE2 cannot run
refused at upload with their line."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from checks_app.engine.child import UNRUNNABLE_IDS_EXIT_CODE, check_files
from checks_app.engine.ids_engine import Restriction
from checks_app.engine.xsd_patterns import PatternUnsupported, compile_xsd_pattern, xsd_pattern_matches, xsd_to_re2
from checks_app.models import IdsDocument, IdsFile
from tests.checks.conftest import WALL_GUIDS, write_walls_ifc

ROOT = Path(__file__).resolve().parents[2]
# Both take exponential time in a backtracking engine on a 40-character value that fails: 2^40 ways to split it.
HOSTILE_PATTERNS = ("(a+)+b", "([A-Za-z0-9]+)*X")
LONG_FAILING_NAME = "a" * 40 + "c"


def names_ids(*patterns: str) -> str:
    specifications = "".join(f"""
    <specification name="Wall names {index}" ifcVersion="IFC4">
      <applicability minOccurs="0" maxOccurs="unbounded">
        <entity><name><simpleValue>IFCWALL</simpleValue></name></entity>
      </applicability>
      <requirements>
        <attribute>
          <name><simpleValue>Name</simpleValue></name>
          <value><xs:restriction base="xs:string"><xs:pattern value="{pattern}"/></xs:restriction></value>
        </attribute>
      </requirements>
    </specification>""" for index, pattern in enumerate(patterns))
    return f"""<?xml version="1.0" encoding="utf-8"?>
<ids xmlns="http://standards.buildingsmart.org/IDS" xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <info><title>Names</title></info>
  <specifications>{specifications}
  </specifications>
</ids>
"""


@pytest.mark.parametrize("pattern, value, matches", [
    # anchored to the whole value; ^ and $ are plain characters
    ("ab", "ab", True), ("ab", "xab", False), ("ab", "abx", False), ("ab", "ab\n", False), ("a|ab", "ab", True),
    ("^ab$", "^ab$", True), ("^ab$", "ab", False),
    # \d is any Unicode decimal digit (Nd), not only 0-9
    (r"\d+", "0123", True), (r"\d+", "١٢٣", True), (r"\d", "a", False), (r"\D", "a", True), (r"\D", "٣", False),
    # \w is everything but punctuation, separators and others: "$" and "+" are word characters, "_" is not
    (r"\w+", "Straße", True), (r"\w+", "a$b+c", True), (r"\w", "_", False), (r"\w", " ", False), (r"\W", "_", True),
    # \s is space, tab, CR and LF only
    (r"\s", "\t", True), (r"\s", "\x0c", False), (r"\s", "\u00a0", False), (r"\S", "\x0c", True),
    # the multi-character escapes inside classes and with subtraction
    (r"[\d-[5]]+", "1234", True), (r"[\d-[5]]+", "5", False), (r"[\s\d]+", " 1\t2", True),
    ("[a-z-[aeiou]]+", "bcd", True), ("[a-z-[aeiou]]+", "bad", False), ("[a-z-[aeiou-[e]]]+", "be", True),
    # XML name characters, Unicode categories and blocks
    (r"\i\c*", "Straße_1.x", True), (r"\i\c*", "1abc", False), (r"\I", "1", True),
    (r"\p{Lu}\p{Ll}+", "Éva", True), (r"\p{Lu}\p{Ll}+", "éva", False), (r"\P{L}+", "12 3", True),
    (r"\p{IsGreek}+", "αβγ", True), (r"\p{IsBasicLatin}+", "é", False),
    # . is anything but a line end; escapes; counted repetition
    (".", "\n", False), ("a.c", "a€c", True), (r"\.\*\?", ".*?", True), (r"[A-Z]{2}[0-9]{2,3}", "AB123", True),
    (r"[A-Z]{2}[0-9]{2,3}", "AB1234", False), ("", "", True), ("", "x", False),
])
def test_xsd_semantics(pattern, value, matches):
    assert xsd_pattern_matches(pattern, value) is matches, xsd_to_re2(pattern)[:200]


@pytest.mark.parametrize("pattern, value, matches", [
    (r"\w+", "a_b", False), (r"\w+", "a$b", True), (r"\s", "\x0c", False), ("(a+)+b", "aab", True),
])
def test_the_engine_restriction_matches_with_xsd_semantics(pattern, value, matches):
    assert (Restriction({"pattern": [pattern]}) == value) is matches
    assert (Restriction({"pattern": pattern}) == value) is matches  # one pattern, as ifctester parses it


def test_every_pattern_of_a_restriction_must_match_and_only_strings_match():
    restriction = Restriction({"pattern": ["[A-Z].*", ".*[0-9]"], "maxLength": "4"})
    assert restriction == "A1" and restriction != "A" and restriction != "a1" and restriction != "AAAA1"
    assert Restriction({"pattern": [".*"]}) != 1.0 and Restriction({"pattern": [".*"]}) != None  # noqa: E711 - its own comparison is under test


def test_a_pattern_is_compiled_once():
    assert compile_xsd_pattern("[A-Z]{3}-[0-9]+") is compile_xsd_pattern("[A-Z]{3}-[0-9]+")


@pytest.mark.parametrize("pattern, reason", [
    ("a{1001}", "RE2"),  # beyond RE2's repetition limit
    ("(a{1000}){1000}", "RE2"),  # beyond its program size
    ("[a-z]{2,}?", "not an XSD regular expression"),  # lazy quantifiers are not XSD
    ("(?=a)a", "not an XSD regular expression"),  # nor look-ahead
    (r"(a)\1", "not an XSD regular expression"),  # nor back-references
    ("[a-z", "not an XSD regular expression"),
])
def test_patterns_that_cannot_run_are_refused(pattern, reason):
    with pytest.raises(PatternUnsupported, match=reason):
        compile_xsd_pattern(pattern)
    with pytest.raises(PatternUnsupported):
        Restriction({"pattern": [pattern]})


def test_a_hostile_pattern_is_decided_at_once_by_the_check_child(tmp_path):
    """The real child process of a check, on a model whose wall names almost match patterns with nested quantifiers.
    With a backtracking engine it runs for hours; the join timeout only keeps the test from hanging there."""
    ifc = write_walls_ifc(tmp_path / "model.ifc", names={"A": LONG_FAILING_NAME, "B": "aaab", "C": "a1B2c3X"})
    (tmp_path / "job.json").write_text(json.dumps({"ids": [{"name": "names.ids", "content": names_ids(*HOSTILE_PATTERNS)}], "overrides": None}))
    done = subprocess.run(
        [sys.executable, "-m", "checks_app.engine.child", "--ifc", str(ifc), "--job", str(tmp_path / "job.json"), "--out", str(tmp_path / "result.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    specifications = json.loads((tmp_path / "result.json").read_text())["specifications"]
    failing = [{failure["guid"] for failure in spec["failures"]} for spec in specifications]
    assert failing == [{WALL_GUIDS["A"], WALL_GUIDS["C"]}, {WALL_GUIDS["A"], WALL_GUIDS["B"]}]


@pytest.mark.parametrize("readable_ifc, code, said", [(True, UNRUNNABLE_IDS_EXIT_CODE, "the IDS cannot be checked"), (False, 2, "cannot read the IFC")])
def test_the_child_says_what_failed_of_the_ifc_it_opens_and_the_ids_it_reads_meanwhile(tmp_path, capsys, readable_ifc, code, said):
    ifc = write_walls_ifc(tmp_path / "model.ifc", names={"A": "aaab"}) if readable_ifc else tmp_path / "model.ifc"
    if not readable_ifc:
        ifc.write_text("ISO-10303-21;\nnot a model\n")
    (tmp_path / "job.json").write_text(json.dumps({"ids": [{"name": "names.ids", "content": names_ids("[A-Z]{1001}")}], "overrides": None}))
    assert check_files(ifc, tmp_path / "job.json", tmp_path / "result.json") == code
    assert said in capsys.readouterr().err
    assert not [thread for thread in threading.enumerate() if thread.name == "ifc-open"]  # the opening thread ended with the check
    assert not (tmp_path / "result.json").exists()


def test_the_child_opens_the_ifc_on_a_thread_of_its_own_while_it_reads_the_ids(tmp_path, monkeypatch):
    import ifcopenshell

    opened_on, opened = [], ifcopenshell.open
    monkeypatch.setattr(ifcopenshell, "open", lambda *args, **kwargs: opened_on.append(threading.current_thread().name) or opened(*args, **kwargs))
    ifc = write_walls_ifc(tmp_path / "model.ifc", names={"A": "aaab"})
    (tmp_path / "job.json").write_text(json.dumps({"ids": [{"name": "names.ids", "content": names_ids(".*")}], "overrides": None}))
    assert check_files(ifc, tmp_path / "job.json", tmp_path / "result.json") == 0
    assert opened_on == ["ifc-open"]


def test_the_child_opens_the_ifc_itself_when_no_thread_can_be_started(tmp_path, monkeypatch):
    def refused(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refused)
    ifc = write_walls_ifc(tmp_path / "model.ifc", names={"A": "aaab"})
    (tmp_path / "job.json").write_text(json.dumps({"ids": [{"name": "names.ids", "content": names_ids(".*")}], "overrides": None}))
    assert check_files(ifc, tmp_path / "job.json", tmp_path / "result.json") == 0
    assert [spec["status"] for spec in json.loads((tmp_path / "result.json").read_text())["specifications"]] == ["pass"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.storage
@pytest.mark.parametrize("pattern, reason", [("[A-Z]{1001}", "RE2"), ("[A-Z]+?", "not an XSD regular expression")])
def test_an_ids_with_a_pattern_that_cannot_run_is_refused_at_upload(put_ids, pattern, reason):
    response = put_ids("names.ids", names_ids("[A-Z].*", pattern).encode())
    body = response.json()
    assert (response.status_code, body["code"]) == (400, 40001), body
    assert "line 23" in body["message"] and reason in body["message"] and pattern in body["message"], body["message"]
    assert not IdsFile.objects.exists() and not IdsDocument.objects.exists()
