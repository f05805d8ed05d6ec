"""Reading BCF archives in tests independently of the code under test (plain ElementTree): a canonical form for
element-by-element comparison, and XSD validation against the official BCF 3.0 schemas."""

from __future__ import annotations

import datetime
import hashlib
import io
import os
import posixpath
import re
import zipfile
from functools import lru_cache
from pathlib import Path
from xml.etree import ElementTree

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTCASES_DIR = Path(os.environ.get("VIEWER_BCF_TESTCASES_DIR") or ROOT.parent / "shared" / "bcf-testcases")
SCHEMAS = {".bcf": "markup.xsd", ".bcfv": "visinfo.xsd", "bcf.version": "version.xsd", ".bcfp": "project.xsd", "extensions.xml": "extensions.xsd", "documents.xml": "documents.xsd"}
ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?$")
DROPPED_ELEMENTS = {"Index"}  # deprecated sort order, kept as list order
DROPPED_ATTRIBUTES = {"ServerAssignedId"}  # the id the other server gave; not ours to keep


def testcases() -> list[Path]:
    if not TESTCASES_DIR.is_dir():
        return []
    return sorted(TESTCASES_DIR.glob("*.bcf"))


def require_testcases() -> None:
    if not testcases():
        if os.environ.get("CI"):
            pytest.fail(f"{TESTCASES_DIR} is missing; CI must have ../shared/bcf-testcases")
        pytest.skip(f"{TESTCASES_DIR} not available")


@lru_cache(maxsize=None)
def schema(name: str):
    import xmlschema

    return xmlschema.XMLSchema10(str(TESTCASES_DIR / "schemas" / name))


def schema_errors(archive: bytes) -> dict[str, list[str]]:
    """Every XML file of the archive against its official XSD: {file: [errors]} for the invalid ones."""
    errors = {}
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        for name in zf.namelist():
            key = next((k for k in SCHEMAS if name == k or (k.startswith(".") and name.endswith(k))), None)
            if key is None:
                continue
            found = [str(error.reason or error) for error in schema(SCHEMAS[key]).iter_errors(ElementTree.fromstring(zf.read(name)))]
            if found:
                errors[name] = found
    return errors


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _leaf(text: str):
    text = " ".join(text.split())
    if ISO_DATETIME.match(text):
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        return (moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)).astimezone(datetime.timezone.utc).isoformat()
    if text in ("true", "false"):
        return text == "true"
    try:
        return float(text)
    except ValueError:
        return text


def canonical(element, files: dict[str, bytes] | None = None, folder: str = ""):
    """(tag, attributes, text, children) with empty containers, xsi attributes and deprecated parts left out; a bitmap's
    file reference is replaced by the digest of the file."""
    attributes = {k: _leaf(v) for k, v in element.attrib.items() if "}" not in k and k not in DROPPED_ATTRIBUTES}
    if "Guid" in attributes and isinstance(attributes["Guid"], str):
        attributes["Guid"] = attributes["Guid"].lower()
    children = []
    for child in element:
        if _local(child.tag) in DROPPED_ELEMENTS:
            continue
        item = canonical(child, files, folder)
        if _local(child.tag) == "Reference" and _local(element.tag) == "Bitmap" and files is not None:
            item = ("Reference", {}, _digest(files, folder, child.text), [])
        if item[1] or item[2] not in (None, "") or item[3]:
            children.append(item)
    text = _leaf(element.text) if element.text and element.text.strip() else None
    return (_local(element.tag), attributes, text, children)


def _digest(files: dict[str, bytes], folder: str, reference: str | None) -> str | None:
    if not reference:
        return None
    data = files.get(posixpath.normpath(posixpath.join(folder, reference.strip())))
    return hashlib.sha256(data).hexdigest() if data is not None else "missing"


def _comment_order(comment) -> tuple:
    date = next((child[2] for child in comment[3] if child[0] == "Date"), "")
    return (date, comment[1].get("Guid"))


def topics(archive: bytes | Path) -> dict[str, dict]:
    """{topic guid: {topic: canonical Topic without Comments/Viewpoints, header, comments (by date),
    viewpoints [{guid, snapshot digest, visinfo}]}} and "documents" {guid: (filename, digest)}."""
    data = archive.read_bytes() if isinstance(archive, Path) else archive
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        files = {name: zf.read(name) for name in zf.namelist() if not name.endswith("/")}
    result = {}
    for name, content in files.items():
        if not name.endswith("/markup.bcf"):
            continue
        folder = posixpath.dirname(name)
        markup = ElementTree.fromstring(content)
        topic = markup.find("Topic")
        comments = topic.find("Comments")
        viewpoints = topic.find("Viewpoints")
        for part in (comments, viewpoints):
            if part is not None:
                topic.remove(part)
        entries = []
        for view_point in viewpoints if viewpoints is not None else ():
            visinfo = view_point.findtext("Viewpoint")
            snapshot = view_point.findtext("Snapshot")
            visinfo_path = posixpath.join(folder, visinfo.strip()) if visinfo else None
            entries.append({
                "guid": view_point.get("Guid").lower(),
                "snapshot": _digest(files, folder, snapshot),
                "visinfo": canonical(ElementTree.fromstring(files[visinfo_path]), files, folder) if visinfo_path in files else None,
            })
        header = markup.find("Header")
        guid = topic.get("Guid").lower()
        result[guid] = {
            "topic": canonical(topic),
            "header": canonical(header) if header is not None and canonical(header)[3] else None,
            "comments": sorted((canonical(c) for c in (comments if comments is not None else ())), key=_comment_order),
            "viewpoints": entries,
        }
    documents = {}
    if "documents.xml" in files:
        for document in ElementTree.fromstring(files["documents.xml"]).iter("Document"):
            guid = document.get("Guid")
            documents[guid] = (document.findtext("Filename"), hashlib.sha256(files.get(f"documents/{guid}", b"missing")).hexdigest())
    return {"topics": result, "documents": documents}
