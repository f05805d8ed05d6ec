"""IDS documents checked before they are kept: well-formed XML without a DTD, valid against the IDS 1.0 XSD (the
copy ifctester ships, identical to buildingSMART's Development/ids.xsd), every xs:pattern an XSD regular expression
the engine's linear-time matcher runs (xsd_patterns), and readable by the engine.

A valid document (the usual upload) is told valid by libxml2's validator (lxml's XMLSchema of the same ids.xsd:
~0.2 ms against ~13 ms for ifctester's reading through xmlschema); anything it refuses goes the whole way (xmlschema
words the violation, and a document only libxml2 refuses would still be kept). Both accept and refuse the same files
among the 287 official test cases and this project's examples (tests/checks/test_ids_files.py compares them); the
check's child reads the document with ifctester and says so if it cannot.

An invalid document raises `IdsInvalid` with the line and the broken rule of the first violation, e.g.
"line 17: attribute cardinality='sometimes': value must be one of ['required', 'prohibited', 'optional']
(XSD rule: XsdEnumerationFacets(['required', 'prohibited', 'optional']) at /ids/specifications/...)".
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from lxml import etree

from checks_app.engine.xsd_patterns import PatternUnsupported, compile_xsd_pattern

IDS_NAMESPACE = "http://standards.buildingsmart.org/IDS"
XSD_NAMESPACE = "http://www.w3.org/2001/XMLSchema"
XSD_PATTERN = f"{{{XSD_NAMESPACE}}}pattern"
XSI_NAMESPACE = "http://www.w3.org/2001/XMLSchema-instance"
# ids.xsd imports these by their w3.org addresses: the copies xmlschema ships and reads itself (no network)
LOCAL_SCHEMAS = {"xml.xsd": "XML/xml.xsd", "XMLSchema.xsd": "XSD_1.0/XMLSchema.xsd"}


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


def _ifctester_ids():
    """ifctester's IDS module, imported on first use: with ifcopenshell and xmlschema it is ~0.3 s of processor time
    that every process of the gateway (workers, manage.py commands) would otherwise pay as checks_app loads."""
    from ifctester import ids

    return ids


class _LocalSchemas(etree.Resolver):
    def resolve(self, url, pubid, context):
        local = LOCAL_SCHEMAS.get((url or "").rsplit("/", 1)[-1])
        import xmlschema

        return self.resolve_filename(str(Path(xmlschema.__file__).parent / "schemas" / local), context) if local else None


_libxml2_lock = threading.Lock()  # one validation at a time: cheap, and the validator's thread safety is not documented


@cache
def _libxml2_schema() -> etree.XMLSchema:
    """ifctester's ids.xsd as libxml2's validator (~2 ms to build, once per process)."""
    parser = etree.XMLParser(no_network=True, resolve_entities=False)
    parser.resolvers.add(_LocalSchemas())
    tree = etree.parse(str(Path(_ifctester_ids().cwd) / "ids.xsd"), parser)
    for schema_import in tree.getroot().iterfind(f"{{{XSD_NAMESPACE}}}import"):
        if schema_import.get("namespace") == XSI_NAMESPACE:  # built into libxml2, which refuses a schema of it
            tree.getroot().remove(schema_import)
    return etree.XMLSchema(tree)


def prepare_validation() -> None:
    """Loads ifctester and builds the validator ahead of the first upload."""
    _libxml2_schema()


def _valid_for_libxml2(root: etree._Element) -> bool:
    with _libxml2_lock:
        return _libxml2_schema().validate(root)


def _first_violation(root: etree._Element) -> str | None:
    for error in _ifctester_ids().get_schema().iter_errors(etree.ElementTree(root), use_location_hints=False):
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
    root, text, _ = _parse_ids(data)
    if text is None or not _valid_for_libxml2(root):
        return validated_by_ifctester(data)
    if pattern := _first_unsupported_pattern(root):
        raise IdsInvalid(pattern)
    title = root.xpath("string(ids:info/ids:title)", namespaces={"ids": IDS_NAMESPACE})  # its text nodes, as xmlschema reads them
    specifications = root.findall(f"{{{IDS_NAMESPACE}}}specifications/{{{IDS_NAMESPACE}}}specification")
    return IdsDocumentInfo(text=text, title=title, specifications=len(specifications))


def _parse_ids(data: bytes) -> tuple[etree._Element, str | None, str]:
    """The document's root (IdsInvalid when it is not XML with an <ids> root) and its text, or None and why not."""
    if not data.strip():
        raise IdsInvalid("the IDS file is empty")
    root = _parse(data)
    if root.tag != f"{{{IDS_NAMESPACE}}}ids":
        raise IdsInvalid(f"line {root.sourceline}: the root element is {root.tag!r}, expected <ids> in the namespace {IDS_NAMESPACE}")
    encoding = root.getroottree().docinfo.encoding or "utf-8"
    try:
        return root, data.decode(encoding), ""
    except (LookupError, UnicodeDecodeError) as exc:
        return root, None, f"the IDS file cannot be decoded as {encoding}: {exc}"


def validated_by_ifctester(data: bytes) -> IdsDocumentInfo:
    """validate_ids through xmlschema and ifctester's reading alone: the words of a violation, and the reference the
    libxml2 shortcut is compared with."""
    from checks_app.engine.ids_engine import load_ids

    root, text, unreadable = _parse_ids(data)
    if text is not None:
        # ifctester's reading decodes with xmlschema, validating as it goes: a valid document is read in one pass; the
        # line and rule of a violation come from a second, validating pass over the lxml tree
        try:
            document = load_ids(text)
        except Exception as exc:  # noqa: BLE001 - anything ifctester cannot read is a bad upload, never a crash
            unreadable = f"the IDS file cannot be read: {type(exc).__name__}: {exc}"
    if unreadable:
        raise IdsInvalid(_first_violation(root) or _first_unsupported_pattern(root) or unreadable)
    if pattern := _first_unsupported_pattern(root):
        raise IdsInvalid(pattern)
    return IdsDocumentInfo(text=text, title=str(document.info.get("title") or ""), specifications=len(document.specifications))
