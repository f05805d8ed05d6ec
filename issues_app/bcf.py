"""BCF 3.0 (buildingSMART BIM Collaboration Format) archives of review issues, with IfcOpenShell's bcf-client.

Knows nothing of HTTP or the database: `write_bcf_archive` turns issue records into .bcfzip bytes, and
`read_bcf_archive` checks an uploaded archive (zip safety, version, well-formed XML) and turns its topics into
`TopicRecord`s, or raises `BcfArchiveError` with the reason.

Status mapping (issue status <-> BCF TopicStatus, case-insensitive on import):
  open     <-> "Open"         (import also: ReOpened, New, Active, Assigned, unknown or missing statuses)
  checking <-> "In Progress"  (import also: Checking, In Review, Pending, Resolving)
  resolved <-> "Resolved"     (import also: Closed, Done, Fixed)
"""

from __future__ import annotations

import datetime
import tempfile
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import defusedxml.ElementTree as SafeElementTree
from bcf.v3 import model as bcf_model
from bcf.v3.bcfxml import BcfXml
from bcf.v3.topic import TopicHandler
from bcf.v3.visinfo import VisualizationInfoHandler
from defusedxml import DefusedXmlException
from xsdata.models.datatype import XmlDateTime

STATUS_TO_BCF = {"open": "Open", "checking": "In Progress", "resolved": "Resolved"}
BCF_TO_STATUS = {
    **{name: "open" for name in ("open", "reopened", "new", "active", "assigned")},
    **{name: "checking" for name in ("in progress", "inprogress", "checking", "in review", "pending", "resolving")},
    **{name: "resolved" for name in ("resolved", "closed", "done", "fixed")},
}
PROVENANCE_LABEL_PREFIX = "provenance:"
TOPIC_TYPE = "Issue"
SNAPSHOT_NAME = "snapshot.png"
DEFAULT_FIELD_OF_VIEW = 60.0
# the identity of exported topics: a stable UUID per (model, issue), so exporting twice gives the same topics and
# importing an archive again is recognised
TOPIC_NAMESPACE = uuid.UUID("6f1c1a52-1d8e-4f4e-9a57-8e0f2a7c3b10")

MAX_ARCHIVE_ENTRIES = 20_000
MAX_EXPANDED_BYTES = 512 * 1024 * 1024
MAX_COMPRESSION_RATIO = 200
XML_SUFFIXES = (".bcf", ".bcfv", ".version", ".bcfp", ".xml")


class BcfArchiveError(ValueError):
    """The archive cannot be imported; the message says why."""


@dataclass(frozen=True)
class IssueRecord:
    """What the archive needs of one issue."""

    issue_id: str
    title: str
    comment: str
    status: str
    author: str
    provenance: str
    entity_id: str
    entity_type: str
    camera: dict | None
    created_at: datetime.datetime
    updated_at: datetime.datetime
    screenshot_png: bytes | None
    topic_guid: str = ""


@dataclass
class TopicRecord:
    """One topic of an imported archive, in the issue's terms."""

    guid: str
    title: str
    comment: str
    status: str
    author: str
    provenance: str
    labels: list[str]
    entity_id: str
    camera: dict | None
    created_at: datetime.datetime | None
    modified_at: datetime.datetime | None
    snapshot: bytes | None
    notes: list[str] = field(default_factory=list)


def topic_guid_for(model_id: str, issue_id: str) -> str:
    return str(uuid.uuid5(TOPIC_NAMESPACE, f"{model_id}/{issue_id}"))


# --- export ----------------------------------------------------------------------------------------------------


def _xml_datetime(value: datetime.datetime) -> XmlDateTime:
    return XmlDateTime.from_datetime(value.astimezone(datetime.timezone.utc))


def _vector3(values) -> list[float] | None:
    return [float(v) for v in values] if isinstance(values, (list, tuple)) and len(values) == 3 else None


def _perspective_camera(camera: dict | None) -> bcf_model.PerspectiveCamera | None:
    eye, look, up = (_vector3((camera or {}).get(key)) for key in ("eye", "look", "up"))
    if not (eye and look and up):
        return None
    direction = [look[i] - eye[i] for i in range(3)]
    if not any(direction):
        return None
    return bcf_model.PerspectiveCamera(
        camera_view_point=bcf_model.Point(**dict(zip("xyz", eye))),
        camera_direction=bcf_model.Direction(**dict(zip("xyz", direction))),
        camera_up_vector=bcf_model.Direction(**dict(zip("xyz", up))),
        field_of_view=DEFAULT_FIELD_OF_VIEW,
        aspect_ratio=1.0,
    )


def _viewpoint(issue: IssueRecord) -> VisualizationInfoHandler | None:
    camera = _perspective_camera(issue.camera)
    if camera is None and not issue.entity_id and not issue.screenshot_png:
        return None
    components = None
    if issue.entity_id:
        components = bcf_model.Components(
            selection=bcf_model.ComponentSelection(component=[bcf_model.Component(ifc_guid=issue.entity_id)]),
            visibility=bcf_model.ComponentVisibility(default_visibility=True),
        )
    info = bcf_model.VisualizationInfo(guid=str(uuid.uuid5(TOPIC_NAMESPACE, issue.topic_guid)), components=components, perspective_camera=camera)
    return VisualizationInfoHandler(info, snapshot=issue.screenshot_png)


def _topic(issue: IssueRecord) -> TopicHandler:
    topic = TopicHandler(topic_dir=Path(issue.topic_guid))
    topic.markup = bcf_model.Markup(topic=bcf_model.Topic(
        guid=issue.topic_guid, title=issue.title, description=issue.comment, topic_type=TOPIC_TYPE, topic_status=STATUS_TO_BCF[issue.status],
        creation_author=issue.author, creation_date=_xml_datetime(issue.created_at),
        modified_author=issue.author, modified_date=_xml_datetime(issue.updated_at),
    ))
    labels = [PROVENANCE_LABEL_PREFIX + issue.provenance] + ([issue.entity_type] if issue.entity_type else [])
    topic.topic.labels = bcf_model.TopicLabels(label=labels)
    viewpoint = _viewpoint(issue)
    if viewpoint is not None:
        topic.add_visinfo_handler(viewpoint, snapshot_filename=SNAPSHOT_NAME if issue.screenshot_png else None)
    return topic


def write_bcf_archive(project_name: str, issues: list[IssueRecord]) -> bytes:
    """A BCF 3.0 archive with one topic per issue (title, description = comment, status, author, dates, labels) and
    one viewpoint (camera, the element as selected component, the screenshot as snapshot)."""
    archive = BcfXml.create_new(project_name=project_name)
    labels = sorted({PROVENANCE_LABEL_PREFIX + "UI", PROVENANCE_LABEL_PREFIX + "AI"} | {i.entity_type for i in issues if i.entity_type})
    archive.extensions = bcf_model.Extensions(
        topic_types=bcf_model.ExtensionsTopicTypes(topic_type=[TOPIC_TYPE]),
        topic_statuses=bcf_model.ExtensionsTopicStatuses(topic_status=list(STATUS_TO_BCF.values())),
        topic_labels=bcf_model.ExtensionsTopicLabels(topic_label=labels),
    )
    for issue in issues:
        topic = _topic(issue)
        archive.topics[topic.guid] = topic
    with tempfile.TemporaryDirectory(prefix="bcf-") as folder:
        target = Path(folder) / "issues.bcfzip"
        archive.save(target)
        return target.read_bytes()


# --- import ----------------------------------------------------------------------------------------------------


def _check_entry_name(name: str) -> None:
    path = PurePosixPath(name)
    if "\\" in name or name.startswith("/") or ".." in path.parts or (path.parts and ":" in path.parts[0]) or "\x00" in name:
        raise BcfArchiveError(f"unsafe path inside the archive: {name!r}")


def _check_archive(archive: zipfile.ZipFile) -> None:
    entries = archive.infolist()
    if len(entries) > MAX_ARCHIVE_ENTRIES:
        raise BcfArchiveError(f"the archive has {len(entries)} entries, more than {MAX_ARCHIVE_ENTRIES}")
    expanded = 0
    for entry in entries:
        _check_entry_name(entry.filename)
        expanded += entry.file_size
        if entry.file_size > 1024 * 1024 and entry.file_size > MAX_COMPRESSION_RATIO * max(entry.compress_size, 1):
            raise BcfArchiveError(f"entry {entry.filename!r} expands {entry.file_size // max(entry.compress_size, 1)}-fold (a zip bomb?)")
    if expanded > MAX_EXPANDED_BYTES:
        raise BcfArchiveError(f"the archive expands to {expanded // (1024 * 1024)} MB, more than {MAX_EXPANDED_BYTES // (1024 * 1024)} MB")


def _read_xml(archive: zipfile.ZipFile, name: str):
    """Parses an XML entry without DTDs or entities (no billion laughs, no external entities)."""
    try:
        return SafeElementTree.fromstring(archive.read(name), forbid_dtd=True)
    except (DefusedXmlException, SafeElementTree.ParseError) as exc:
        raise BcfArchiveError(f"{name} is not well-formed XML without DTD: {exc}") from None
    except zipfile.BadZipFile as exc:
        raise BcfArchiveError(f"{name} cannot be read from the archive: {exc}") from None


def _check_version(archive: zipfile.ZipFile) -> None:
    if "bcf.version" not in archive.namelist():
        raise BcfArchiveError("not a BCF archive: bcf.version is missing")
    version = _read_xml(archive, "bcf.version").get("VersionId", "")
    if version in ("2.0", "2.1"):
        raise BcfArchiveError(f"BCF {version} is not supported: export the issues as BCF 3.0")
    if version != "3.0":
        raise BcfArchiveError(f"BCF version {version or '(none)'} is not supported: expected 3.0")


def _check_topic_folders(archive: zipfile.ZipFile) -> None:
    names = set(archive.namelist())
    for name in sorted(names):
        if name.lower().endswith(XML_SUFFIXES):
            _read_xml(archive, name)
    folders = {PurePosixPath(name).parts[0] for name in names if len(PurePosixPath(name).parts) > 1}
    for folder in sorted(folders - {"documents"}):
        if f"{folder}/markup.bcf" not in names:
            raise BcfArchiveError(f"topic folder {folder!r} has no markup.bcf")


def _status(value: str | None) -> str:
    return BCF_TO_STATUS.get((value or "").strip().lower(), "open")


def _as_datetime(value: XmlDateTime | None) -> datetime.datetime | None:
    if value is None:
        return None
    moment = value.to_datetime()
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def _camera(info: bcf_model.VisualizationInfo) -> dict | None:
    camera = info.perspective_camera or info.orthogonal_camera
    if camera is None:
        return None
    eye = [camera.camera_view_point.x, camera.camera_view_point.y, camera.camera_view_point.z]
    direction = camera.camera_direction
    up = camera.camera_up_vector
    return {"eye": eye, "look": [eye[0] + direction.x, eye[1] + direction.y, eye[2] + direction.z], "up": [up.x, up.y, up.z]}


def _selected_guid(info: bcf_model.VisualizationInfo) -> str:
    selection = info.components.selection if info.components else None
    for component in selection.component if selection else ():
        if component.ifc_guid:
            return component.ifc_guid
    return ""


def _comment_text(topic: bcf_model.Topic, comments: list[bcf_model.Comment]) -> str:
    parts = [topic.description] if topic.description else []
    for comment in sorted(comments, key=lambda c: _as_datetime(c.date) or datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)):
        if comment.comment:
            when = _as_datetime(comment.date)
            stamp = f" ({when.strftime('%Y-%m-%d %H:%M')} UTC)" if when else ""
            parts.append(f"{comment.author or 'unknown'}{stamp}: {comment.comment}")
    return "\n\n".join(parts)


def _topic_record(handler: TopicHandler) -> TopicRecord:
    topic = handler.topic
    labels = list(topic.labels.label) if topic.labels else []
    provenance = next((label[len(PROVENANCE_LABEL_PREFIX):] for label in labels if label.startswith(PROVENANCE_LABEL_PREFIX)), "UI")
    record = TopicRecord(
        guid=topic.guid, title=(topic.title or "").strip(), comment=_comment_text(topic, handler.comments), status=_status(topic.topic_status),
        author=(topic.creation_author or "").strip(), provenance=provenance if provenance in ("UI", "AI") else "UI",
        labels=[label for label in labels if not label.startswith(PROVENANCE_LABEL_PREFIX)], entity_id="", camera=None,
        created_at=_as_datetime(topic.creation_date), modified_at=_as_datetime(topic.modified_date), snapshot=None,
    )
    viewpoints = list(topic.viewpoints.view_point) if topic.viewpoints else []
    if viewpoints:
        first = handler.viewpoints.get(viewpoints[0].viewpoint or "")
        if first is not None:
            record.entity_id = _selected_guid(first.visualization_info)
            record.camera = _camera(first.visualization_info)
            record.snapshot = first.snapshot
        if len(viewpoints) > 1:
            record.notes.append(f"{len(viewpoints) - 1} more viewpoint(s) not imported: an issue keeps the first")
    return record


def read_bcf_archive(source) -> list[TopicRecord]:
    """The topics of a BCF 3.0 archive (a path or a seekable binary file object), oldest first."""
    try:
        with zipfile.ZipFile(source) as archive:
            _check_archive(archive)
            _check_version(archive)
            _check_topic_folders(archive)
            try:
                with BcfXml(filename=source) as document:
                    records = [_topic_record(handler) for handler in document.topics.values()]
            except Exception as exc:  # xsdata's parser errors: the markup does not follow the BCF 3.0 schema
                raise BcfArchiveError(f"the archive does not follow the BCF 3.0 schema: {exc}") from None
    except zipfile.BadZipFile:
        raise BcfArchiveError("not a zip archive (a .bcfzip is a zip file)") from None
    except (zipfile.LargeZipFile, NotImplementedError, RuntimeError) as exc:
        raise BcfArchiveError(f"the archive cannot be read: {exc}") from None
    return sorted(records, key=lambda r: r.created_at or datetime.datetime.max.replace(tzinfo=datetime.timezone.utc))
