"""An official buildingSMART BCF-XML 3.0 archive imported through the REST API of issues
(POST /api/v1/models/{id}/issues/bcf) is served through the BCF API with nothing lost that the API can express:
every topic field, header file, document reference, related topic, comment, viewpoint (camera, components,
clipping planes, lines, bitmaps, snapshot bytes) and document, compared field by field with the archive's XML read
here independently. Not expressible in the API, so not compared: Index (deprecated), BimSnippet, ServerAssignedId."""

from __future__ import annotations

import datetime
import io
import posixpath
import zipfile
from xml.etree import ElementTree

import pytest

from tests.bcfapi import topic_helpers
from tests.bcfapi.topic_helpers import answer, send
from tests.issues import bcf_xml

pytestmark = pytest.mark.django_db
team = topic_helpers.team

CASES = [path.stem for path in bcf_xml.testcases()] or ["(bcf-testcases missing)"]
UTC = datetime.timezone.utc


def moment(text: str | None):
    if not text:
        return None
    value = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def text(element, path: str) -> str | None:
    found = element.findtext(path) if element is not None else None
    return found.strip() if found and found.strip() else None


def vector(element) -> dict:
    return {axis.lower(): float(element.findtext(axis)) for axis in "XYZ"}


def component(element) -> dict:
    found = {"ifc_guid": element.get("IfcGuid"), "originating_system": text(element, "OriginatingSystem"), "authoring_tool_id": text(element, "AuthoringToolId")}
    return {key: value for key, value in found.items() if value is not None}


def components_of(parent, path: str) -> list[dict]:
    return [component(element) for element in parent.findall(path)] if parent is not None else []


def camera(element, last: str) -> dict | None:
    if element is None:
        return None
    found = {key: vector(element.find(tag)) for key, tag in (("camera_view_point", "CameraViewPoint"), ("camera_direction", "CameraDirection"), ("camera_up_vector", "CameraUpVector"))}
    found[last] = float(element.findtext("FieldOfView" if last == "field_of_view" else "ViewToWorldScale"))
    found["aspect_ratio"] = float(element.findtext("AspectRatio") or 1.0)
    return found


def expected_viewpoint(visinfo, files: dict[str, bytes], folder: str) -> dict:
    """What the BCF API must answer for a visinfo: the viewpoint and its three component routes, bitmaps with bytes."""
    components = visinfo.find("Components")
    visibility = components.find("Visibility") if components is not None else None
    hints = visibility.find("ViewSetupHints") if visibility is not None else None
    shown = {"default_visibility": (visibility.get("DefaultVisibility", "false") == "true") if visibility is not None else False,
             "exceptions": components_of(visibility, "Exceptions/Component")}
    if hints is not None:
        shown["view_setup_hints"] = {key: hints.get(attribute, "false") == "true" for key, attribute in
                                     (("spaces_visible", "SpacesVisible"), ("space_boundaries_visible", "SpaceBoundariesVisible"), ("openings_visible", "OpeningsVisible"))}
    return {
        "perspective_camera": camera(visinfo.find("PerspectiveCamera"), "field_of_view"),
        "orthogonal_camera": camera(visinfo.find("OrthogonalCamera"), "view_to_world_scale"),
        "lines": [{"start_point": vector(line.find("StartPoint")), "end_point": vector(line.find("EndPoint"))} for line in visinfo.findall("Lines/Line")],
        "clipping_planes": [{"location": vector(plane.find("Location")), "direction": vector(plane.find("Direction"))} for plane in visinfo.findall("ClippingPlanes/ClippingPlane")],
        "bitmaps": [({"bitmap_type": bitmap.findtext("Format").strip().lower().replace("jpeg", "jpg"), "location": vector(bitmap.find("Location")),
                      "normal": vector(bitmap.find("Normal")), "up": vector(bitmap.find("Up")), "height": float(bitmap.findtext("Height"))},
                     files[posixpath.normpath(posixpath.join(folder, bitmap.findtext("Reference").strip()))]) for bitmap in visinfo.findall("Bitmaps/Bitmap")],
        "selection": components_of(components, "Selection/Component"),
        "coloring": [{"color": color.get("Color"), "components": components_of(color, "Components/Component")} for color in components.findall("Coloring/Color")] if components is not None else [],
        "visibility": shown,
    }


def archive_content(path) -> tuple[dict[str, bytes], list]:
    with zipfile.ZipFile(path) as archive:
        files = {name: archive.read(name) for name in archive.namelist() if not name.endswith("/")}
    markups = [(posixpath.dirname(name), ElementTree.fromstring(data)) for name, data in files.items() if name.endswith("/markup.bcf")]
    return files, markups


def import_through_rest(team, path) -> None:
    archive = io.BytesIO(path.read_bytes())
    archive.name = path.name
    result = team.clients["rita"].post(f"/api/v1/models/{team.model.id}/issues/bcf", {"file": archive}).json()
    assert result["code"] == 0, result


def compare_topic(client, base: str, markup, files: dict[str, bytes], folder: str) -> None:
    xml = markup.find("Topic")
    guid = xml.get("Guid").lower()
    topic = answer(client, "GET", f"{base}/topics/{guid}", schema="Collaboration/Topic/topic_GET.json")
    assert topic["guid"].lower() == guid
    assert (topic["topic_type"], topic["topic_status"], topic["title"]) == (xml.get("TopicType"), xml.get("TopicStatus"), text(xml, "Title"))
    for key, tag in (("priority", "Priority"), ("assigned_to", "AssignedTo"), ("stage", "Stage"), ("description", "Description"), ("creation_author", "CreationAuthor")):
        assert topic.get(key) == text(xml, tag), key
    assert topic.get("modified_author") == text(xml, "ModifiedAuthor")
    for key, tag in (("creation_date", "CreationDate"), ("modified_date", "ModifiedDate"), ("due_date", "DueDate")):
        assert moment(topic.get(key)) == moment(text(xml, tag)), key
    assert topic["labels"] == [label.text.strip() for label in xml.findall("Labels/Label")]
    assert topic["reference_links"] == [link.text.strip() for link in xml.findall("ReferenceLinks/ReferenceLink")]

    related = answer(client, "GET", f"{base}/topics/{guid}/related_topics", schema="Collaboration/RelatedTopic/related_topic_GET.json[]")
    assert [item["related_topic_guid"].lower() for item in related] == [item.get("Guid").lower() for item in xml.findall("RelatedTopics/RelatedTopic")]
    references = answer(client, "GET", f"{base}/topics/{guid}/document_references", schema="Collaboration/DocumentReference/document_reference_GET.json[]")
    assert [(r["guid"].lower(), (r["document_guid"] or "").lower() or None, r["url"], r["description"]) for r in references] == [
        (r.get("Guid").lower(), (text(r, "DocumentGuid") or "").lower() or None, text(r, "Url"), text(r, "Description")) for r in xml.findall("DocumentReferences/DocumentReference")]
    header = answer(client, "GET", f"{base}/topics/{guid}/files", schema="Collaboration/File/file_GET.json[]")
    assert [(f["filename"], moment(f["date"]), f["reference"], f["ifc_project"], f["ifc_spatial_structure_element"]) for f in header] == [
        (text(f, "Filename"), moment(text(f, "Date")), text(f, "Reference"), f.get("IfcProject"), f.get("IfcSpatialStructureElement")) for f in markup.findall("Header/Files/File")]

    comments = answer(client, "GET", f"{base}/topics/{guid}/comments", schema="Collaboration/Comment/comment_GET.json[]")
    expected = sorted(xml.findall("Comments/Comment"), key=lambda c: (moment(text(c, "Date")), c.get("Guid").lower()))
    assert [(c["guid"].lower(), moment(c["date"]), c["author"], c["comment"], (c["viewpoint_guid"] or "").lower() or None,
             moment(c.get("modified_date")), c.get("modified_author")) for c in comments] == [
        (c.get("Guid").lower(), moment(text(c, "Date")), text(c, "Author"), c.findtext("Comment") or "", (c.find("Viewpoint").get("Guid").lower() if c.find("Viewpoint") is not None else None),
         moment(text(c, "ModifiedDate")), text(c, "ModifiedAuthor")) for c in expected]

    viewpoints = answer(client, "GET", f"{base}/topics/{guid}/viewpoints", schema="Collaboration/Viewpoint/viewpoint_GET.json[]")
    view_points = xml.findall("Viewpoints/ViewPoint")
    assert [vp["guid"].lower() for vp in viewpoints] == [vp.get("Guid").lower() for vp in view_points]
    for served, view_point in zip(viewpoints, view_points):
        path = f"{base}/topics/{guid}/viewpoints/{served['guid']}"
        visinfo = ElementTree.fromstring(files[posixpath.join(folder, text(view_point, "Viewpoint"))])
        wanted = expected_viewpoint(visinfo, files, folder)
        for key in ("perspective_camera", "orthogonal_camera"):
            assert served.get(key) == wanted[key], key  # the same decimal text read as a float on both sides: exact
        assert (served["lines"], served["clipping_planes"]) == (wanted["lines"], wanted["clipping_planes"])
        assert [{k: v for k, v in b.items() if k != "guid"} for b in served["bitmaps"]] == [b for b, _ in wanted["bitmaps"]]
        for bitmap, (_, data) in zip(served["bitmaps"], wanted["bitmaps"]):
            assert b"".join(send(client, "GET", f"{path}/bitmaps/{bitmap['guid']}").streaming_content) == data
        for part in ("selection", "coloring", "visibility"):
            assert answer(client, "GET", f"{path}/{part}")[part] == wanted[part], part
        snapshot = text(view_point, "Snapshot")
        if snapshot:
            assert served["snapshot"]["snapshot_type"] == ("jpg" if snapshot.lower().endswith((".jpg", ".jpeg")) else "png")
            assert b"".join(send(client, "GET", f"{path}/snapshot").streaming_content) == files[posixpath.join(folder, snapshot)]
        else:
            assert "snapshot" not in served


@pytest.mark.parametrize("case", CASES)
def test_an_official_archive_imported_through_rest_is_served_by_the_bcf_api_field_by_field(team, case):
    bcf_xml.require_testcases()
    path = bcf_xml.TESTCASES_DIR / f"{case}.bcf"
    import_through_rest(team, path)
    files, markups = archive_content(path)
    rita = team.clients["rita"]
    listed = answer(rita, "GET", f"{team.base}/topics", schema="Collaboration/Topic/topic_GET.json[]")
    assert sorted(topic["guid"].lower() for topic in listed) == sorted(markup.find("Topic").get("Guid").lower() for _, markup in markups)
    for folder, markup in markups:
        compare_topic(rita, team.base, markup, files, folder)
    if "documents.xml" in files:
        served = answer(rita, "GET", f"{team.base}/documents", schema="Collaboration/Document/document_GET.json[]")
        expected = [(d.get("Guid").lower(), text(d, "Filename")) for d in ElementTree.fromstring(files["documents.xml"]).iter("Document")]
        assert [(d["guid"].lower(), d["filename"]) for d in served] == expected
        for guid, _ in expected:
            document = rita.get(f"{team.base}/documents/{guid}")
            assert b"".join(document.streaming_content) == files[f"documents/{guid}"]
