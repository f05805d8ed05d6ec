"""BCF 3.0 (buildingSMART BIM Collaboration Format) archives of review issues, with the BCF 3.0 XML bindings of
IfcOpenShell's bcf-client.

Knows nothing of HTTP or the database. `write_bcf_archive` writes `TopicRecord`s into a .bcfzip (streamed into an
open file, images copied from disk); `open_bcf_archive` checks an uploaded archive (zip safety, version, well-formed
XML without DTD) and reads its topics into `TopicRecord`s whose images and documents are `PendingImage`s/
`PendingDocument`s, copied out of the zip only when the caller stores them. Raises `BcfArchiveError` with the reason.

Viewpoints are kept in the BCF-API 3.0 JSON form of `issues_app.viewpoints`, so a topic's viewpoints, comments and
fields travel through import and export unchanged.

Status mapping (issue status <-> BCF TopicStatus, case-insensitive on import; an imported TopicStatus is exported again
as it was while it still maps to the issue's status):
  open     <-> "Open"         (import also: ReOpened, New, Active, Assigned, unknown or missing statuses)
  checking <-> "In Progress"  (import also: In_Progress, Checking, In Review, Pending, Resolving)
  resolved <-> "Resolved"     (import also: Closed, Done, Fixed, Solved)
Provenance: an AI-made topic carries the label "provenance:AI"; a topic without it is UI-made (the default), so a
person's topics gain no label on export (an older "provenance:UI" label is read on import as well).
"""

from __future__ import annotations

import datetime
import math
import posixpath
import shutil
import uuid
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

import defusedxml.ElementTree as SafeElementTree
from bcf.v3 import model as bcf_model
from bcf.xml_parser import XmlParserSerializer
from defusedxml import DefusedXmlException
from xsdata.models.datatype import XmlDateTime

from core.limits import SCREENSHOT_MAX_BYTES
from issues_app.viewpoints import COLOR_RE, GUID_RE, IFC_GUID_RE, PendingImage, image_type_of

STATUS_TO_BCF = {"open": "Open", "checking": "In Progress", "resolved": "Resolved"}
BCF_TO_STATUS = {
    **{name: "open" for name in ("open", "reopened", "new", "active", "assigned")},
    **{name: "checking" for name in ("in progress", "in_progress", "inprogress", "checking", "in review", "pending", "resolving")},
    **{name: "resolved" for name in ("resolved", "closed", "done", "fixed", "solved")},
}
PROVENANCE_LABEL_PREFIX = "provenance:"
DEFAULT_PROVENANCE = "UI"
DEFAULT_TOPIC_TYPE = "Issue"
DEFAULT_AUTHOR = "local-user"
DEFAULT_FIELD_OF_VIEW = 60.0
# the identity of exported topics: a stable UUID per (model, issue), so exporting twice gives the same topics and
# importing an archive again is recognised
TOPIC_NAMESPACE = uuid.UUID("6f1c1a52-1d8e-4f4e-9a57-8e0f2a7c3b10")

MAX_ARCHIVE_ENTRIES = 20_000
MAX_EXPANDED_BYTES = 512 * 1024 * 1024
MAX_COMPRESSION_RATIO = 200
MAX_XML_BYTES = 16 * 1024 * 1024
MAX_DOCUMENT_BYTES = 50 * 1024 * 1024
XML_SUFFIXES = (".bcf", ".bcfv", ".version", ".bcfp", ".xml")
UTC = datetime.timezone.utc

_xml = XmlParserSerializer()


class BcfArchiveError(ValueError):
    """The archive cannot be imported; the message says why."""


@dataclass
class CommentRecord:
    guid: str
    author: str
    date: datetime.datetime
    text: str = ""
    viewpoint_guid: str = ""
    modified_date: datetime.datetime | None = None
    modified_author: str = ""


@dataclass
class PendingDocument:
    """A document of the archive's documents folder, copied out only when stored."""

    guid: str
    filename: str
    description: str
    size: int
    write: Callable


@dataclass
class TopicRecord:
    """One topic in the issue's terms; the same record is written on export and read on import.

    viewpoints: BCF-API 3.0 dicts (images as URLs on export, as PendingImage under "pending" on import).
    document_references: [{guid, url, documentGuid, description, filename, documentDescription}].
    On export, `camera`, `entity_id`, `entity_bounds` and `screenshot` make the one viewpoint of an issue that has none
    stored."""

    guid: str
    title: str
    status: str
    creation_author: str
    created_at: datetime.datetime
    description: str = ""
    topic_status: str = ""
    topic_type: str = DEFAULT_TOPIC_TYPE
    provenance: str = DEFAULT_PROVENANCE
    priority: str = ""
    labels: list[str] = field(default_factory=list)
    assigned_to: str = ""
    due_date: datetime.datetime | None = None
    stage: str = ""
    reference_links: list[str] = field(default_factory=list)
    related_topics: list[str] = field(default_factory=list)
    document_references: list[dict] = field(default_factory=list)
    header_files: list[dict] = field(default_factory=list)
    modified_author: str = ""
    modified_at: datetime.datetime | None = None
    comments: list[CommentRecord] = field(default_factory=list)
    viewpoints: list[dict] = field(default_factory=list)
    camera: dict | None = None
    entity_id: str = ""
    entity_bounds: list[float] | None = None  # [min x, y, z, max x, y, z] of the element, IFC world coordinates
    screenshot: Path | None = None
    notes: list[str] = field(default_factory=list)

    def last_change(self) -> datetime.datetime:
        """The newest date of the topic and its comments: what "newer" means when an archive is imported again."""
        moments = [self.modified_at or self.created_at]
        moments += [comment.modified_date or comment.date for comment in self.comments]
        return max(moments)


def topic_guid_for(model_id: str, issue_id: str) -> str:
    return str(uuid.uuid5(TOPIC_NAMESPACE, f"{model_id}/{issue_id}"))


def bcf_status(status: str, imported_status: str) -> str:
    """The TopicStatus to export: the imported one while it still maps to the issue's status."""
    if imported_status and BCF_TO_STATUS.get(imported_status.strip().lower(), "open") == status:
        return imported_status
    return STATUS_TO_BCF[status]


def issue_status(value: str | None) -> str:
    return BCF_TO_STATUS.get((value or "").strip().lower(), "open")


# --- export ----------------------------------------------------------------------------------------------------


def _text(value: str | None) -> str | None:
    """XSD NonEmptyOrBlankString: blank text is left out."""
    return value if value and value.strip() else None


def _xml_datetime(value: datetime.datetime | None) -> XmlDateTime | None:
    return XmlDateTime.from_datetime(value.astimezone(UTC)) if value else None


def _point(vector: dict, kind=bcf_model.Point):
    return kind(x=vector["x"], y=vector["y"], z=vector["z"])


def _xml_components(components: list[dict], kind=bcf_model.Component) -> list:
    return [
        kind(ifc_guid=c.get("ifc_guid"), originating_system=_text(c.get("originating_system")), authoring_tool_id=_text(c.get("authoring_tool_id")))
        for c in components
    ]


def _xml_camera(viewpoint: dict):
    if viewpoint.get("perspective_camera"):
        camera, kind, last = viewpoint["perspective_camera"], bcf_model.PerspectiveCamera, "field_of_view"
    else:
        camera, kind, last = viewpoint["orthogonal_camera"], bcf_model.OrthogonalCamera, "view_to_world_scale"
    return kind(
        camera_view_point=_point(camera["camera_view_point"]), camera_direction=_point(camera["camera_direction"], bcf_model.Direction),
        camera_up_vector=_point(camera["camera_up_vector"], bcf_model.Direction), aspect_ratio=camera["aspect_ratio"], **{last: camera[last]},
    )


def _xml_visualization(viewpoint: dict, bitmap_names: list[str]) -> bcf_model.VisualizationInfo:
    components = None
    if viewpoint.get("components"):
        block = viewpoint["components"]
        visibility = None
        if block.get("visibility"):
            raw = block["visibility"]
            hints = bcf_model.ViewSetupHints(**raw["view_setup_hints"]) if raw.get("view_setup_hints") else None
            exceptions = bcf_model.ComponentVisibilityExceptions(component=_xml_components(raw["exceptions"])) if raw["exceptions"] else None
            visibility = bcf_model.ComponentVisibility(default_visibility=raw["default_visibility"], view_setup_hints=hints, exceptions=exceptions)
        coloring = None
        if block.get("coloring"):
            coloring = bcf_model.ComponentColoring(color=[
                bcf_model.ComponentColoringColor(color=item["color"], components=bcf_model.ComponentColoringColorComponents(component=_xml_components(item["components"])))
                for item in block["coloring"]
            ])
        selection = bcf_model.ComponentSelection(component=_xml_components(block["selection"])) if block.get("selection") else None
        components = bcf_model.Components(selection=selection, visibility=visibility, coloring=coloring)
    camera = _xml_camera(viewpoint)
    lines = [bcf_model.Line(start_point=_point(line["start_point"]), end_point=_point(line["end_point"])) for line in viewpoint.get("lines") or ()]
    planes = [bcf_model.ClippingPlane(location=_point(plane["location"]), direction=_point(plane["direction"], bcf_model.Direction)) for plane in viewpoint.get("clipping_planes") or ()]
    bitmaps = [
        bcf_model.Bitmap(
            format=bcf_model.BitmapFormat(bitmap["bitmap_type"]), reference=name, location=_point(bitmap["location"]),
            normal=_point(bitmap["normal"], bcf_model.Direction), up=_point(bitmap["up"], bcf_model.Direction), height=bitmap["height"],
        )
        for bitmap, name in zip(viewpoint.get("bitmaps") or (), bitmap_names)
    ]
    return bcf_model.VisualizationInfo(
        guid=viewpoint["guid"], components=components,
        perspective_camera=camera if isinstance(camera, bcf_model.PerspectiveCamera) else None,
        orthogonal_camera=camera if isinstance(camera, bcf_model.OrthogonalCamera) else None,
        lines=bcf_model.VisualizationInfoLines(line=lines) if lines else None,
        clipping_planes=bcf_model.VisualizationInfoClippingPlanes(clipping_plane=planes) if planes else None,
        bitmaps=bcf_model.VisualizationInfoBitmaps(bitmap=bitmaps) if bitmaps else None,
    )


def _perspective(eye, direction, up) -> dict:
    return {
        "camera_view_point": dict(zip("xyz", map(float, eye[:3]))), "camera_direction": dict(zip("xyz", map(float, direction[:3]))),
        "camera_up_vector": dict(zip("xyz", map(float, up[:3]))), "field_of_view": DEFAULT_FIELD_OF_VIEW, "aspect_ratio": 1.0,
    }


def camera_at_bounds(bounds: list[float]) -> dict | None:
    """A perspective camera (field of view 60) looking down at the centre of the bounds from the south-west, far
    enough for the sphere around them to fill the view, Z up."""
    if not (isinstance(bounds, list) and len(bounds) == 6 and all(isinstance(v, (int, float)) and math.isfinite(v) for v in bounds)):
        return None
    low, high = bounds[:3], bounds[3:]
    centre = [(a + b) / 2 for a, b in zip(low, high)]
    radius = max(math.dist(low, high) / 2, 0.5)  # a point-sized element is still shown with what is around it
    distance = radius / math.sin(math.radians(DEFAULT_FIELD_OF_VIEW) / 2)
    direction = [1.0, 1.0, -1.0]  # from (-x, -y, +z) towards the centre
    norm = math.sqrt(sum(d * d for d in direction))
    direction = [d / norm for d in direction]
    eye = [c - d * distance for c, d in zip(centre, direction)]
    up = [-direction[0] * direction[2], -direction[1] * direction[2], direction[0] ** 2 + direction[1] ** 2]  # Z made square to it
    return _perspective(eye, direction, up)


def synthesized_viewpoint(topic: TopicRecord) -> dict | None:
    """The one viewpoint of an issue without stored viewpoints: its camera (perspective, eye, direction = look - eye,
    up, field of view 60) or, without one, a camera aimed at its element's bounds; its element as the selected
    component and its screenshot as snapshot."""
    camera = topic.camera or {}
    eye, look, up = (camera.get(key) for key in ("eye", "look", "up"))
    perspective = None
    if all(isinstance(v, list) and len(v) >= 3 for v in (eye, look, up)):
        direction = [look[i] - eye[i] for i in range(3)]
        if any(direction):
            perspective = _perspective(eye, direction, up)
    if perspective is None and topic.entity_bounds is not None:
        perspective = camera_at_bounds(topic.entity_bounds)
    if perspective is None and topic.screenshot is None:
        return None
    components = None
    if perspective is not None and IFC_GUID_RE.match(topic.entity_id or ""):
        components = {"selection": [{"ifc_guid": topic.entity_id}], "visibility": {"default_visibility": True, "exceptions": [], "view_setup_hints": None}, "coloring": []}
    return {
        "guid": str(uuid.uuid5(TOPIC_NAMESPACE, topic.guid)), "perspective_camera": perspective, "orthogonal_camera": None,
        "lines": [], "clipping_planes": [], "bitmaps": [], "components": components,
        "snapshot": {"snapshot_type": "png", "file": topic.screenshot} if topic.screenshot else None,
    }


def _document_reference(reference: dict) -> bcf_model.DocumentReference:
    return bcf_model.DocumentReference(
        guid=reference["guid"], document_guid=reference.get("documentGuid"), url=None if reference.get("documentGuid") else _text(reference.get("url")),
        description=_text(reference.get("description")),
    )


def _header(files: list[dict]) -> bcf_model.Header | None:
    if not files:
        return None
    return bcf_model.Header(files=bcf_model.HeaderFiles(file=[
        bcf_model.File(
            filename=_text(item.get("filename")), date=_xml_datetime(_parse_iso(item.get("date"))), reference=_text(item.get("reference")),
            ifc_project=item.get("ifcProject"), ifc_spatial_structure_element=item.get("ifcSpatialStructureElement"), is_external=True,
        )
        for item in files
    ]))


def _parse_iso(value: str | None) -> datetime.datetime | None:
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _labels(topic: TopicRecord) -> list[str]:
    return [*topic.labels, *([PROVENANCE_LABEL_PREFIX + topic.provenance] if topic.provenance != DEFAULT_PROVENANCE else [])]


def _markup(topic: TopicRecord, viewpoint_files: list[tuple[dict, str, str | None]]) -> bcf_model.Markup:
    labels = _labels(topic)
    comments = [
        bcf_model.Comment(
            guid=c.guid, date=_xml_datetime(c.date), author=_text(c.author) or DEFAULT_AUTHOR, comment=_text(c.text),
            viewpoint=bcf_model.CommentViewpoint(guid=c.viewpoint_guid) if c.viewpoint_guid else None,
            modified_date=_xml_datetime(c.modified_date), modified_author=_text(c.modified_author),
        )
        for c in topic.comments
    ]
    view_points = [bcf_model.ViewPoint(guid=vp["guid"], viewpoint=visinfo, snapshot=snapshot) for vp, visinfo, snapshot in viewpoint_files]
    return bcf_model.Markup(header=_header(topic.header_files), topic=bcf_model.Topic(
        guid=topic.guid, topic_type=_text(topic.topic_type) or DEFAULT_TOPIC_TYPE, topic_status=bcf_status(topic.status, topic.topic_status),
        reference_links=bcf_model.TopicReferenceLinks(reference_link=topic.reference_links) if topic.reference_links else None,
        title=topic.title, priority=_text(topic.priority), labels=bcf_model.TopicLabels(label=labels) if labels else None,
        creation_date=_xml_datetime(topic.created_at), creation_author=_text(topic.creation_author) or DEFAULT_AUTHOR,
        modified_date=_xml_datetime(topic.modified_at), modified_author=_text(topic.modified_author) if topic.modified_at else None,
        due_date=_xml_datetime(topic.due_date), assigned_to=_text(topic.assigned_to), stage=_text(topic.stage), description=_text(topic.description),
        document_references=bcf_model.TopicDocumentReferences(document_reference=[_document_reference(r) for r in topic.document_references]) if topic.document_references else None,
        related_topics=bcf_model.TopicRelatedTopics(related_topic=[bcf_model.TopicRelatedTopicsRelatedTopic(guid=g) for g in topic.related_topics]) if topic.related_topics else None,
        comments=bcf_model.TopicComments(comment=comments) if comments else None,
        viewpoints=bcf_model.TopicViewpoints(view_point=view_points) if view_points else None,
    ))


def _extensions(topics: list[TopicRecord]) -> bcf_model.Extensions:
    def collect(values) -> list[str]:
        return sorted({value for value in values if _text(value)})

    return bcf_model.Extensions(
        topic_types=bcf_model.ExtensionsTopicTypes(topic_type=collect([DEFAULT_TOPIC_TYPE, *(t.topic_type for t in topics)])),
        topic_statuses=bcf_model.ExtensionsTopicStatuses(topic_status=collect([*STATUS_TO_BCF.values(), *(bcf_status(t.status, t.topic_status) for t in topics)])),
        priorities=bcf_model.ExtensionsPriorities(priority=collect(t.priority for t in topics)),
        topic_labels=bcf_model.ExtensionsTopicLabels(topic_label=collect(label for t in topics for label in _labels(t))),
        users=bcf_model.ExtensionsUsers(user=collect(t.assigned_to for t in topics)),
        stages=bcf_model.ExtensionsStages(stage=collect(t.stage for t in topics)),
    )


def write_bcf_archive(
    target, *, project_id: str, project_name: str, topics: list[TopicRecord], documents: dict[str, tuple[str, str, Path]],
    image_file: Callable[[str], Path | None],
) -> None:
    """Writes a BCF 3.0 archive into `target` (a path or a binary file): one topic folder per record with markup.bcf,
    one {guid}.bcfv per viewpoint with a camera, snapshots and bitmaps copied from the files `image_file` finds for
    their URLs, and the internal documents ({guid: (filename, description, path)}) in documents/ with documents.xml."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bcf.version", _xml.serialize(bcf_model.Version(version_id="3.0")))
        archive.writestr("project.bcfp", _xml.serialize(bcf_model.ProjectInfo(project=bcf_model.Project(project_id=project_id, name=_text(project_name)))))
        archive.writestr("extensions.xml", _xml.serialize(_extensions(topics)))
        if documents:
            info = bcf_model.DocumentInfo(documents=bcf_model.DocumentInfoDocuments(document=[
                bcf_model.Document(guid=guid, filename=filename, description=_text(description)) for guid, (filename, description, _) in sorted(documents.items())
            ]))
            archive.writestr("documents.xml", _xml.serialize(info))
            for guid, (_, _, path) in sorted(documents.items()):
                archive.write(path, f"documents/{guid}")
        for topic in topics:
            viewpoints = topic.viewpoints or [vp for vp in [synthesized_viewpoint(topic)] if vp]
            viewpoint_files = []
            for viewpoint in viewpoints:
                viewpoint_files.append(_write_viewpoint(archive, topic.guid, viewpoint, image_file))
            archive.writestr(f"{topic.guid}/markup.bcf", _xml.serialize(_markup(topic, viewpoint_files)))


def _write_viewpoint(archive: zipfile.ZipFile, folder: str, viewpoint: dict, image_file) -> tuple[dict, str | None, str | None]:
    guid = viewpoint["guid"]
    snapshot_name = None
    snapshot = viewpoint.get("snapshot")
    if snapshot:
        path = snapshot.get("file") or image_file(snapshot.get("snapshot_url", ""))
        if path is not None:
            snapshot_name = f"{guid}.{snapshot['snapshot_type']}"
            archive.write(path, f"{folder}/{snapshot_name}")
    if not (viewpoint.get("perspective_camera") or viewpoint.get("orthogonal_camera")):
        return viewpoint, None, snapshot_name  # a snapshot-only viewpoint: BCF needs a camera for a .bcfv
    bitmap_names = []
    for index, bitmap in enumerate(viewpoint.get("bitmaps") or ()):
        path = image_file(bitmap.get("bitmap_url", ""))
        name = f"{guid}_bitmap{index}.{bitmap['bitmap_type']}"
        if path is not None:
            archive.write(path, f"{folder}/{name}")
        bitmap_names.append(name)
    visinfo_name = f"{guid}.bcfv"
    archive.writestr(f"{folder}/{visinfo_name}", _xml.serialize(_xml_visualization(viewpoint, bitmap_names)))
    return viewpoint, visinfo_name, snapshot_name


# --- import ----------------------------------------------------------------------------------------------------


def _check_entry_name(name: str) -> None:
    path = PurePosixPath(name)
    if "\\" in name or name.startswith("/") or ".." in path.parts or (path.parts and ":" in path.parts[0]) or "\x00" in name:
        raise BcfArchiveError(f"unsafe path inside the archive: {name!r}")


def _check_archive(archive: zipfile.ZipFile) -> None:
    """Every entry is checked: its name, its expansion ratio (whatever its size) and the archive's expanded total."""
    entries = archive.infolist()
    if len(entries) > MAX_ARCHIVE_ENTRIES:
        raise BcfArchiveError(f"the archive has {len(entries)} entries, more than {MAX_ARCHIVE_ENTRIES}")
    expanded = 0
    for entry in entries:
        _check_entry_name(entry.filename)
        expanded += entry.file_size
        if entry.file_size > MAX_COMPRESSION_RATIO * max(entry.compress_size, 1):
            raise BcfArchiveError(f"entry {entry.filename!r} expands {entry.file_size // max(entry.compress_size, 1)}-fold (a zip bomb?)")
    if expanded > MAX_EXPANDED_BYTES:
        raise BcfArchiveError(f"the archive expands to {expanded // (1024 * 1024)} MB, more than {MAX_EXPANDED_BYTES // (1024 * 1024)} MB")


def _read_entry(archive: zipfile.ZipFile, name: str) -> bytes:
    if archive.getinfo(name).file_size > MAX_XML_BYTES:
        raise BcfArchiveError(f"{name} is larger than {MAX_XML_BYTES // (1024 * 1024)} MB")
    try:
        return archive.read(name)
    except zipfile.BadZipFile as exc:
        raise BcfArchiveError(f"{name} cannot be read from the archive: {exc}") from None


def _check_xml(archive: zipfile.ZipFile, name: str) -> bytes:
    """The entry's bytes, once defusedxml has parsed them without DTDs or entities (no billion laughs, no external
    entities); bcf-client's bindings parse them afterwards."""
    data = _read_entry(archive, name)
    try:
        SafeElementTree.fromstring(data, forbid_dtd=True)
    except (DefusedXmlException, SafeElementTree.ParseError) as exc:
        raise BcfArchiveError(f"{name} is not well-formed XML without DTD: {exc}") from None
    return data


def _parse(archive: zipfile.ZipFile, name: str, kind):
    data = _check_xml(archive, name)
    try:
        return _xml.parse(data, kind)
    except Exception as exc:  # xsdata's parser errors: the file does not follow the BCF 3.0 schema
        raise BcfArchiveError(f"{name} does not follow the BCF 3.0 schema: {exc}") from None


def _check_version(archive: zipfile.ZipFile) -> None:
    if "bcf.version" not in archive.namelist():
        raise BcfArchiveError("not a BCF archive: bcf.version is missing")
    version = SafeElementTree.fromstring(_check_xml(archive, "bcf.version"), forbid_dtd=True).get("VersionId", "")
    if version in ("2.0", "2.1"):
        raise BcfArchiveError(f"BCF {version} is not supported: export the issues as BCF 3.0")
    if version != "3.0":
        raise BcfArchiveError(f"BCF version {version or '(none)'} is not supported: expected 3.0")


def _as_datetime(value: XmlDateTime | None) -> datetime.datetime | None:
    if value is None:
        return None
    moment = value.to_datetime()
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _guid(value: str | None) -> str | None:
    guid = (value or "").strip().lower()
    return guid if GUID_RE.match(guid) else None


def _vector(value) -> dict:
    return {"x": float(value.x), "y": float(value.y), "z": float(value.z)}


def _components(components, dropped: list | None = None) -> list[dict]:
    """Components as BCF-API dicts; an IfcGuid that is not one (22 characters of the IFC alphabet) is left out, and a
    component left without any id is dropped (counted in `dropped`), so the export stays schema-valid."""
    result = []
    for component in components or ():
        item = {}
        if component.ifc_guid and IFC_GUID_RE.match(component.ifc_guid):
            item["ifc_guid"] = component.ifc_guid
        elif component.ifc_guid and dropped is not None:
            dropped.append(component.ifc_guid)
        if _text(component.originating_system):
            item["originating_system"] = component.originating_system
        if _text(component.authoring_tool_id):
            item["authoring_tool_id"] = component.authoring_tool_id
        if item.get("ifc_guid") or item.get("authoring_tool_id"):
            result.append(item)
    return result


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def _camera(camera, last: str) -> dict | None:
    if camera is None:
        return None
    return {
        "camera_view_point": _vector(camera.camera_view_point), "camera_direction": _vector(camera.camera_direction),
        "camera_up_vector": _vector(camera.camera_up_vector), last: float(getattr(camera, last)), "aspect_ratio": float(camera.aspect_ratio),
    }


def _viewpoint_components(block, dropped: list) -> dict | None:
    if block is None:
        return None
    visibility = None
    if block.visibility is not None:
        hints = block.visibility.view_setup_hints
        visibility = {
            "default_visibility": bool(block.visibility.default_visibility),
            "exceptions": _components(block.visibility.exceptions.component if block.visibility.exceptions else (), dropped),
            "view_setup_hints": {
                "spaces_visible": bool(hints.spaces_visible), "space_boundaries_visible": bool(hints.space_boundaries_visible),
                "openings_visible": bool(hints.openings_visible),
            } if hints is not None else None,
        }
    coloring = []
    for color in block.coloring.color if block.coloring else ():
        components = _components(color.components.component if color.components else (), dropped)
        if components and COLOR_RE.match(color.color or ""):
            coloring.append({"color": color.color, "components": components})
    return {"selection": _components(block.selection.component if block.selection else (), dropped), "visibility": visibility, "coloring": coloring}


class _TopicReader:
    """Reads one topic folder."""

    def __init__(self, archive: zipfile.ZipFile, names: set[str], folder: str):
        self.archive, self.names, self.folder = archive, names, folder
        self.notes: list[str] = []

    def entry(self, reference: str | None) -> str | None:
        if not reference:
            return None
        name = posixpath.normpath(posixpath.join(self.folder, reference.strip()))
        return name if name in self.names else None

    def image(self, reference: str | None, what: str) -> PendingImage | None:
        name = self.entry(reference)
        if name is None:
            if reference:
                self.notes.append(f"{what} {reference!r} is missing from the archive")
            return None
        info = self.archive.getinfo(name)
        if info.file_size > SCREENSHOT_MAX_BYTES:
            self.notes.append(f"{what} {reference!r} not kept: larger than 5 MB")
            return None
        with self.archive.open(name) as handle:
            image_type = image_type_of(handle.read(8))
        if image_type is None:
            self.notes.append(f"{what} {reference!r} not kept: neither PNG nor JPEG")
            return None
        return PendingImage(image_type, lambda target: _copy_entry(self.archive, name, target))

    def viewpoint(self, view_point: bcf_model.ViewPoint, guid: str) -> dict | None:
        snapshot = self.image(view_point.snapshot, "snapshot")
        snapshot_entry = {"snapshot_type": snapshot.image_type, "pending": snapshot} if snapshot else None
        visinfo = self.entry(view_point.viewpoint)
        if visinfo is None:
            if view_point.viewpoint:
                self.notes.append(f"viewpoint file {view_point.viewpoint!r} is missing from the archive")
            if snapshot_entry is None:
                return None
            return {"guid": guid, "perspective_camera": None, "orthogonal_camera": None, "lines": [], "clipping_planes": [], "bitmaps": [],
                    "snapshot": snapshot_entry, "components": None}
        info = _parse(self.archive, visinfo, bcf_model.VisualizationInfo)
        bitmaps = []
        for bitmap in info.bitmaps.bitmap if info.bitmaps else ():
            image = self.image(bitmap.reference, "bitmap")
            if image is not None:
                bitmaps.append({
                    "bitmap_type": image.image_type, "pending": image, "location": _vector(bitmap.location), "normal": _vector(bitmap.normal),
                    "up": _vector(bitmap.up), "height": float(bitmap.height),
                })
        dropped: list[str] = []
        viewpoint = {
            "guid": guid,
            "perspective_camera": _camera(info.perspective_camera, "field_of_view"),
            "orthogonal_camera": _camera(info.orthogonal_camera, "view_to_world_scale") if info.perspective_camera is None else None,
            "lines": [{"start_point": _vector(line.start_point), "end_point": _vector(line.end_point)} for line in (info.lines.line if info.lines else ())],
            "clipping_planes": [
                {"location": _vector(plane.location), "direction": _vector(plane.direction)}
                for plane in (info.clipping_planes.clipping_plane if info.clipping_planes else ())
            ],
            "bitmaps": bitmaps,
            "snapshot": snapshot_entry,
            "components": _viewpoint_components(info.components, dropped),
        }
        if dropped:
            self.notes.append(f"viewpoint {guid}: {len(dropped)} component id(s) that are no IFC GlobalId left out (first: {dropped[0][:40]!r})")
        if not _finite({key: value for key, value in viewpoint.items() if key not in ("snapshot", "bitmaps")}) or not _finite(
            [{k: v for k, v in bitmap.items() if k != "pending"} for bitmap in bitmaps]
        ):
            self.notes.append(f"viewpoint {guid} not kept: it has infinite or NaN coordinates")
            return None
        return viewpoint

    def viewpoints(self, topic: bcf_model.Topic) -> list[dict]:
        listed = list(topic.viewpoints.view_point) if topic.viewpoints else []
        ordered = sorted(enumerate(listed), key=lambda item: (item[1].index if item[1].index is not None else item[0], item[0]))
        viewpoints, seen = [], set()
        for _, view_point in ordered:
            guid = _guid(view_point.guid) or str(uuid.uuid5(TOPIC_NAMESPACE, f"{topic.guid}/{view_point.guid}"))
            if guid in seen:
                self.notes.append(f"viewpoint {guid} appears twice: the first is kept")
                continue
            viewpoint = self.viewpoint(view_point, guid)
            if viewpoint is not None:
                seen.add(guid)
                viewpoints.append(viewpoint)
        return viewpoints

    def comments(self, topic: bcf_model.Topic, viewpoint_guids: set[str]) -> list[CommentRecord]:
        comments, seen = [], set()
        for comment in topic.comments.comment if topic.comments else ():
            guid = _guid(comment.guid) or str(uuid.uuid5(TOPIC_NAMESPACE, f"{topic.guid}/{comment.guid}"))
            if guid in seen:
                self.notes.append(f"comment {guid} appears twice: the first is kept")
                continue
            seen.add(guid)
            viewpoint = _guid(comment.viewpoint.guid) if comment.viewpoint else None
            if comment.viewpoint and viewpoint not in viewpoint_guids:
                self.notes.append(f"comment {guid} refers to viewpoint {comment.viewpoint.guid} the topic does not have: the reference is dropped")
                viewpoint = None
            comments.append(CommentRecord(
                guid=guid, author=(comment.author or "").strip() or DEFAULT_AUTHOR, date=_as_datetime(comment.date), text=comment.comment or "",
                viewpoint_guid=viewpoint or "", modified_date=_as_datetime(comment.modified_date), modified_author=(comment.modified_author or "").strip(),
            ))
        return sorted(comments, key=lambda c: c.date)

    def record(self, markup: bcf_model.Markup, documents: dict[str, PendingDocument]) -> TopicRecord:
        topic = markup.topic
        guid = _guid(topic.guid)
        if guid is None:
            raise BcfArchiveError(f"{self.folder}/markup.bcf: the topic Guid {topic.guid!r} is not a UUID")
        labels = [label for label in (topic.labels.label if topic.labels else ()) if _text(label)]
        provenance = next((label[len(PROVENANCE_LABEL_PREFIX):] for label in labels if label.startswith(PROVENANCE_LABEL_PREFIX)), DEFAULT_PROVENANCE)
        viewpoints = self.viewpoints(topic)
        references = []
        for reference in topic.document_references.document_reference if topic.document_references else ():
            document_guid = _guid(reference.document_guid)
            document = documents.get(document_guid) if document_guid else None
            if reference.document_guid and document is None:
                self.notes.append(f"document {reference.document_guid} is not in the archive's documents: its reference keeps only the description")
            references.append({
                "guid": _guid(reference.guid) or str(uuid.uuid4()), "url": None if document else _text(reference.url),
                "documentGuid": document.guid if document else None, "description": _text(reference.description),
                "filename": document.filename if document else None, "documentDescription": _text(document.description) if document else None,
            })
        header_files = []
        for item in markup.header.files.file if markup.header and markup.header.files else ():
            if not item.is_external:
                self.notes.append(f"header file {item.filename or item.reference!r} inside the archive is not kept")
                continue
            date = _as_datetime(item.date)
            header_files.append({
                "filename": _text(item.filename), "date": date.isoformat() if date else None, "reference": _text(item.reference),
                "ifcProject": item.ifc_project if IFC_GUID_RE.match(item.ifc_project or "") else None,
                "ifcSpatialStructureElement": item.ifc_spatial_structure_element if IFC_GUID_RE.match(item.ifc_spatial_structure_element or "") else None,
            })
        if topic.bim_snippet is not None:
            self.notes.append("BimSnippet not kept")
        created_at = _as_datetime(topic.creation_date) or datetime.datetime.now(UTC)
        return TopicRecord(
            guid=guid, title=(topic.title or "").strip(), description=topic.description or "", status=issue_status(topic.topic_status),
            topic_status=(topic.topic_status or "").strip(), topic_type=(topic.topic_type or "").strip() or DEFAULT_TOPIC_TYPE,
            provenance=provenance if provenance in ("UI", "AI") else DEFAULT_PROVENANCE,
            labels=[label for label in labels if not label.startswith(PROVENANCE_LABEL_PREFIX)],
            priority=(topic.priority or "").strip(), assigned_to=(topic.assigned_to or "").strip(), due_date=_as_datetime(topic.due_date),
            stage=(topic.stage or "").strip(), reference_links=[link for link in (topic.reference_links.reference_link if topic.reference_links else ()) if _text(link)],
            related_topics=[g for g in (_guid(related.guid) for related in (topic.related_topics.related_topic if topic.related_topics else ())) if g],
            document_references=references, header_files=header_files,
            creation_author=(topic.creation_author or "").strip() or DEFAULT_AUTHOR, created_at=created_at,
            modified_author=(topic.modified_author or "").strip(), modified_at=_as_datetime(topic.modified_date),
            comments=self.comments(topic, {vp["guid"] for vp in viewpoints}), viewpoints=viewpoints, notes=self.notes,
        )


def _copy_entry(archive: zipfile.ZipFile, name: str, target) -> None:
    try:
        with archive.open(name) as source:
            shutil.copyfileobj(source, target, 64 * 1024)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:  # a CRC error shows only at the end
        raise BcfArchiveError(f"{name} cannot be read from the archive: {exc}") from None


def _documents(archive: zipfile.ZipFile, names: set[str]) -> dict[str, PendingDocument]:
    if "documents.xml" not in names:
        return {}
    info = _parse(archive, "documents.xml", bcf_model.DocumentInfo)
    documents = {}
    for document in info.documents.document if info.documents else ():
        guid = _guid(document.guid)
        name = f"documents/{document.guid}"
        if guid is None or name not in names:
            continue
        size = archive.getinfo(name).file_size
        if size > MAX_DOCUMENT_BYTES:
            continue
        documents[guid] = PendingDocument(guid, (document.filename or "").strip() or guid, document.description or "", size,
                                          lambda target, name=name: _copy_entry(archive, name, target))
    return documents


@dataclass
class BcfArchive:
    topics: list[TopicRecord]
    documents: dict[str, PendingDocument]


@contextmanager
def open_bcf_archive(source):
    """The topics (oldest first) and documents of a BCF 3.0 archive (a path or a seekable binary file); images and
    documents are read from the archive only while the context is open."""
    try:
        archive = zipfile.ZipFile(source)
    except zipfile.BadZipFile:
        raise BcfArchiveError("not a zip archive (a .bcfzip is a zip file)") from None
    with archive:
        try:
            content = _read_archive(archive)
        except zipfile.BadZipFile as exc:
            raise BcfArchiveError(f"the archive cannot be read: {exc}") from None
        except (zipfile.LargeZipFile, NotImplementedError, RuntimeError) as exc:
            raise BcfArchiveError(f"the archive cannot be read: {exc}") from None
        yield content


def _read_archive(archive: zipfile.ZipFile) -> BcfArchive:
    _check_archive(archive)
    _check_version(archive)
    names = set(archive.namelist())
    for name in sorted(names):
        if name.lower().endswith(XML_SUFFIXES) and not name.startswith("documents/"):
            _check_xml(archive, name)
    folders = {PurePosixPath(name).parts[0] for name in names if len(PurePosixPath(name).parts) > 1}
    for folder in sorted(folders - {"documents"}):
        if f"{folder}/markup.bcf" not in names:
            raise BcfArchiveError(f"topic folder {folder!r} has no markup.bcf")
    documents = _documents(archive, names)
    topics = [
        _TopicReader(archive, names, folder).record(_parse(archive, f"{folder}/markup.bcf", bcf_model.Markup), documents)
        for folder in sorted(folders - {"documents"})
    ]
    return BcfArchive(sorted(topics, key=lambda t: t.created_at), documents)
