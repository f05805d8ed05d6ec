"""A finished check as a document: a self-contained HTML report a person can send, and a BCF 3.0 archive
(IfcOpenShell's bcf-client) with one topic per failing element or per failing specification."""

from __future__ import annotations

import datetime
import math
import tempfile
import uuid
from pathlib import Path

from bcf.v3 import model as bcf_model
from bcf.v3.bcfxml import BcfXml
from bcf.v3.topic import TopicHandler
from bcf.v3.visinfo import VisualizationInfoHandler
from django.template.loader import render_to_string
from django.utils import timezone
from xsdata.models.datatype import XmlDateTime

from checks_app.models import Check

TOPIC_NAMESPACE = uuid.UUID("0c7e3c52-7a43-4d5e-8f2b-1f7c4a0d9e61")
TOPIC_TYPE = "IDS failure"
TOPIC_STATUS = "Open"
AUTHOR = "ids-check"
LABEL = "IDS"
DESCRIPTION_LINES = 200
FIELD_OF_VIEW = 60.0


def html_report(check: Check) -> str:
    result = check.result
    failing = [spec for spec in result["specifications"] if spec["status"] == "fail"]
    return render_to_string("checks/report.html", {
        "check": check, "model": check.model, "result": result, "summary": result["summary"], "failing": failing,
        "overrides": result.get("overrides") or {"included": False}, "generated": timezone.now(),
    })


def _failure_line(failure: dict) -> str:
    return f"{failure['requirement']}: found {failure['found']}; expected {failure['expected']}"


def _camera(points: list[list[float]]) -> bcf_model.PerspectiveCamera:
    """A perspective camera looking down at the points from the south-west, far enough to see them all
    (BCF 3.0 viewpoints need a camera; without locations it looks at the origin)."""
    points = points or [[0.0, 0.0, 0.0]]
    centre = [sum(p[i] for p in points) / len(points) for i in range(3)]
    radius = max(5.0, *(math.dist(p, centre) for p in points))
    distance = radius / math.tan(math.radians(FIELD_OF_VIEW / 2)) + radius
    direction = [1 / math.sqrt(3), 1 / math.sqrt(3), -1 / math.sqrt(3)]
    eye = [centre[i] - direction[i] * distance for i in range(3)]
    up = [1 / math.sqrt(6), 1 / math.sqrt(6), 2 / math.sqrt(6)]  # perpendicular to direction, pointing up
    return bcf_model.PerspectiveCamera(
        camera_view_point=bcf_model.Point(**dict(zip("xyz", eye))),
        camera_direction=bcf_model.Direction(**dict(zip("xyz", direction))),
        camera_up_vector=bcf_model.Direction(**dict(zip("xyz", up))),
        field_of_view=FIELD_OF_VIEW,
        aspect_ratio=1.0,
    )


def _topic(check: Check, key: str, title: str, lines: list[str], guids: list[str], labels: list[str]) -> TopicHandler:
    guid = str(uuid.uuid5(TOPIC_NAMESPACE, f"{check.id}/{key}"))
    moment = XmlDateTime.from_datetime((check.finished_at or timezone.now()).astimezone(datetime.timezone.utc))
    if len(lines) > DESCRIPTION_LINES:
        lines = lines[:DESCRIPTION_LINES] + [f"... and {len(lines) - DESCRIPTION_LINES} more (see the check's HTML report)"]
    topic = TopicHandler(topic_dir=Path(guid))
    topic.markup = bcf_model.Markup(topic=bcf_model.Topic(
        guid=guid, title=title[:512], description="\n".join(lines), topic_type=TOPIC_TYPE, topic_status=TOPIC_STATUS,
        creation_author=AUTHOR, creation_date=moment, labels=bcf_model.TopicLabels(label=labels),
    ))
    if guids:
        components = bcf_model.Components(
            selection=bcf_model.ComponentSelection(component=[bcf_model.Component(ifc_guid=g) for g in guids]),
            visibility=bcf_model.ComponentVisibility(default_visibility=True),
        )
        locations = check.result.get("locations") or {}
        camera = _camera([locations[g] for g in guids if g in locations])
        info = bcf_model.VisualizationInfo(guid=str(uuid.uuid5(TOPIC_NAMESPACE, guid)), components=components, perspective_camera=camera)
        topic.add_visinfo_handler(VisualizationInfoHandler(info))
    return topic


def _ifc_guid(guid: str) -> str | None:
    """Only IFC GlobalIds can be selected in a viewpoint (materials or profiles failing a property are not rooted)."""
    return guid if len(guid) == 22 and not guid.startswith("#") else None


def _element_topics(check: Check) -> list[TopicHandler]:
    elements: dict[str, dict] = {}
    topics = []
    for spec in check.result["specifications"]:
        if spec["status"] != "fail":
            continue
        if not spec["failures"]:
            topics.append(_topic(check, f"spec/{spec['ids']}/{spec['name']}", f"{spec['name']}: {spec['reason']}",
                                 [f"{spec['ids']}: {spec['reason']}"], [], [LABEL]))
        for failure in spec["failures"]:
            entry = elements.setdefault(failure["guid"], {"failure": failure, "lines": [], "specs": []})
            if spec["name"] not in entry["specs"]:
                entry["specs"].append(spec["name"])
            entry["lines"].append(f"[{spec['name']}] {_failure_line(failure)}")
    for guid, entry in elements.items():
        failure = entry["failure"]
        title = f"{failure['name'] or failure['type']} fails {', '.join(entry['specs'])}"
        topics.append(_topic(check, f"element/{guid}", title, entry["lines"], [g for g in [_ifc_guid(guid)] if g], [LABEL, failure["type"]]))
    return topics


def _specification_topics(check: Check) -> list[TopicHandler]:
    topics = []
    for spec in check.result["specifications"]:
        if spec["status"] != "fail":
            continue
        lines = [f"{spec['ids']}: {spec['reason']}", *(f"{f['type']} {f['guid']} {f['name']}: {_failure_line(f)}" for f in spec["failures"])]
        guids = list(dict.fromkeys(g for f in spec["failures"] if (g := _ifc_guid(f["guid"]))))
        title = f"{spec['name']}: {spec['failedElements']} of {spec['applicable']} elements fail" if spec["failures"] else f"{spec['name']}: {spec['reason']}"
        topics.append(_topic(check, f"spec/{spec['ids']}/{spec['name']}", title, lines, guids, [LABEL]))
    return topics


def bcf_report(check: Check, per: str) -> bytes:
    topics = _element_topics(check) if per == "element" else _specification_topics(check)
    archive = BcfXml.create_new(project_name=f"{check.model.name} - IDS check {check.id}")
    labels = sorted({LABEL} | {label for topic in topics for label in topic.topic.labels.label})
    archive.extensions = bcf_model.Extensions(
        topic_types=bcf_model.ExtensionsTopicTypes(topic_type=[TOPIC_TYPE]),
        topic_statuses=bcf_model.ExtensionsTopicStatuses(topic_status=[TOPIC_STATUS]),
        topic_labels=bcf_model.ExtensionsTopicLabels(topic_label=labels),
    )
    for topic in topics:
        archive.topics[topic.guid] = topic
    with tempfile.TemporaryDirectory(prefix="ids-bcf-") as folder:
        target = Path(folder) / "check.bcfzip"
        archive.save(target)
        return target.read_bytes()
