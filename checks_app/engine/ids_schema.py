"""IDS documents checked before they are kept: well-formed XML without a DTD, valid against the IDS 1.0 XSD (the
copy ifctester ships, identical to buildingSMART's Development/ids.xsd), every xs:pattern an XSD regular expression
the engine's linear-time matcher runs (xsd_patterns), and readable by the engine.

An invalid document raises `IdsInvalid` with the line and the broken rule of the first violation, e.g.
"line 17: attribute cardinality='sometimes': value must be one of ['required', 'prohibited', 'optional']
(XSD rule: XsdEnumerationFacets(['required', 'prohibited', 'optional']) at /ids/specifications/...)".
"""

from __future__ import annotations

from dataclasses import dataclass

from ifctester import ids as ifctester_ids
from lxml import etree

from checks_app.engine.xsd_patterns import PatternUnsupported, compile_xsd_pattern

IDS_NAMESPACE = "http://standards.buildingsmart.org/IDS"
XSD_PATTERN = "{http://www.w3.org/2001/XMLSchema}pattern"


class IdsInvalid(ValueError):
    """The document is not a valid IDS 1.0 file; the message says where and why."""


@dataclass(frozen=True)
class IdsDocumentInfo:
    text: str
    title: str
    specifications: int


def _parse(data: bytes) -> etree._Element:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_comments=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (0, 0)
        message = exc.error_log[0].message if len(exc.error_log) else exc.msg
        raise IdsInvalid(f"not well-formed XML: line {line}, column {column}: {message}") from None
    if root.getroottree().docinfo.doctype:
        raise IdsInvalid("the document has a DTD (<!DOCTYPE ...>): IDS files must not declare DTDs or entities")
    return root


def _first_violation(root: etree._Element) -> str | None:
    for error in ifctester_ids.get_schema().iter_errors(etree.ElementTree(root), use_location_hints=False):
        line = f"line {error.sourceline}" if error.sourceline else "the document"
        rule = repr(error.validator)
        if len(rule) > 300:
            rule = rule[:297] + "..."
        return f"{line}: {error.reason or error.message} (XSD rule: {rule} at {error.path or '/'})"
    return None


def _first_unsupported_pattern(root: etree._Element) -> str | None:
    for element in root.iter(XSD_PATTERN):
        try:
            compile_xsd_pattern(element.get("value", ""))
        except PatternUnsupported as exc:
            return f"line {element.sourceline}: {exc}"
    return None


def validate_ids(data: bytes) -> IdsDocumentInfo:
    """Checks an uploaded IDS file; returns its text, title and number of specifications, or raises IdsInvalid."""
    from checks_app.engine.ids_engine import load_ids

    if not data.strip():
        raise IdsInvalid("the IDS file is empty")
    root = _parse(data)
    if root.tag != f"{{{IDS_NAMESPACE}}}ids":
        raise IdsInvalid(f"line {root.sourceline}: the root element is {root.tag!r}, expected <ids> in the namespace {IDS_NAMESPACE}")
    encoding = root.getroottree().docinfo.encoding or "utf-8"
    try:
        text = data.decode(encoding)
    except (LookupError, UnicodeDecodeError) as exc:
        text, unreadable = None, f"the IDS file cannot be decoded as {encoding}: {exc}"
    else:
        # ifctester's reading decodes with xmlschema, validating as it goes: a valid document (the usual upload) is
        # read in one pass; the line and rule of a violation come from a second, validating pass over the lxml tree
        try:
            document, unreadable = load_ids(text), None
        except Exception as exc:  # noqa: BLE001 - anything ifctester cannot read is a bad upload, never a crash
            unreadable = f"the IDS file cannot be read: {type(exc).__name__}: {exc}"
    if unreadable is not None:
        raise IdsInvalid(_first_violation(root) or _first_unsupported_pattern(root) or unreadable)
    if pattern := _first_unsupported_pattern(root):
        raise IdsInvalid(pattern)
    return IdsDocumentInfo(text=text, title=str(document.info.get("title") or ""), specifications=len(document.specifications))
