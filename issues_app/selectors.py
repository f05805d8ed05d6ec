"""Read-side queries of the review records: issues, comments, issue images, overrides and change entries of a
model, the issue rows for the list, the IFC values behind overrides."""

from __future__ import annotations

import datetime
import json
import re
import threading
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path

import orjson
from django.db import connection

from core.errors import NotFound
from core.lookups import get_or_not_found
from issues_app.issue_files import IMAGE_NAME_RE, issues_folder
from issues_app.models import OVERRIDE_FIELDS, Comment, Issue
from issues_app.viewpoints import GUID_RE
from models_app.public import (
    ELEMENT_BOUNDS_FILE,
    ELEMENT_VALUES_FILE,
    METADATA_FILE,
    model_file,
)
from models_app.selectors import model_get

# API field -> column, in the order of IssueSerializer
ISSUE_COLUMNS = {
    "id": "id", "entityId": "entity_id", "entityName": "entity_name", "entityType": "entity_type", "title": "title",
    "comment": "comment", "author": "author", "provenance": "provenance", "camera": "camera", "status": "status",
    "screenshot": "screenshot", "createdAt": "created_at", "updatedAt": "updated_at",
    "topicGuid": "bcf_topic_guid", "topicType": "topic_type", "priority": "priority", "labels": "labels", "assignedTo": "assigned_to",
    "dueDate": "due_date", "stage": "stage", "referenceLinks": "reference_links", "relatedTopics": "related_topics",
    "documentReferences": "document_references", "creationAuthor": "author", "modifiedAuthor": "modified_author",
    "modifiedAt": "modified_at", "viewpoints": "viewpoints", "authorVerified": "author_verified",
    "modifiedAuthorVerified": "modified_author_verified", "assignedToMember": "assigned_to_member",
}
TIMESTAMP_FIELDS = ("createdAt", "updatedAt", "dueDate", "modifiedAt")
BOOLEAN_FIELDS = ("authorVerified", "modifiedAuthorVerified", "assignedToMember")  # SQLite gives 0 or 1
JSON_FIELDS = ("camera", "labels", "referenceLinks", "relatedTopics", "documentReferences", "viewpoints")
# GET issues filters: query parameter -> column compared for equality
EQUALITY_FILTERS = {"status": "status", "priority": "priority", "assignedTo": "assigned_to", "topicType": "topic_type", "stage": "stage", "entityId": "entity_id"}
SEARCHED_COLUMNS = ("title", "comment", "entity_name", "id")
ISSUE_ID_RE = re.compile(r"^i_[0-9a-f]{12}$")


def _issue_list_sql(vendor: str, filters: dict) -> tuple[str, list]:
    # SQLite keeps timestamps as UTC text: reading them as text skips parsing 2,000 datetimes per thousand issues
    timestamps = {ISSUE_COLUMNS[name] for name in TIMESTAMP_FIELDS}
    columns = [f"CAST({c} AS TEXT)" if vendor == "sqlite" and c in timestamps else c for c in ISSUE_COLUMNS.values()]
    where, params = ["model_id = %s"], []
    for name, column in EQUALITY_FILTERS.items():
        if filters.get(name) is not None:
            where.append(f"{column} = %s")
            params.append(filters[name])
    if filters.get("q"):
        pattern = "%" + filters["q"].lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append("(" + " OR ".join(f"LOWER({column}) LIKE %s ESCAPE '\\'" for column in SEARCHED_COLUMNS) + ")")
        params += [pattern] * len(SEARCHED_COLUMNS)
    return f"SELECT {', '.join(columns)} FROM {Issue._meta.db_table} WHERE {' AND '.join(where)} ORDER BY created_at DESC", params

_cache_lock = threading.Lock()


@lru_cache(maxsize=16)
def _values_from_sidecar(path: str, _version: int) -> dict[str, dict[str, str]]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


@lru_cache(maxsize=16)
def _values_from_metadata(path: str, _version: int) -> dict[str, dict[str, str]]:
    """For conversions without the sidecar (older ones, the web-ifc fallback): Name and properties by name."""
    with open(path, encoding="utf-8") as handle:
        metadata = json.load(handle)
    psets = {p["id"]: p for p in metadata.get("propertySets", [])}
    values: dict[str, dict[str, str]] = {}
    for obj in metadata.get("metaObjects", []):
        fields = {"Name": obj.get("name") or ""}
        for pset_id in sorted(obj.get("propertySetIds", ()), key=lambda i: (not psets.get(i, {}).get("name", "").endswith("Common"), psets.get(i, {}).get("name", ""))):
            for row in psets.get(pset_id, {}).get("properties", ()):
                field = row.get("name")
                if field in OVERRIDE_FIELDS and field not in fields and row.get("value") not in (None, ""):
                    fields[field] = str(row["value"])
        values[obj["id"]] = fields
    return values


@lru_cache(maxsize=16)
def _elements_from_metadata(path: str, _version: int) -> dict[str, tuple[str, str]]:
    with open(path, encoding="utf-8") as handle:
        metadata = json.load(handle)
    return {obj["id"]: (obj.get("name") or "", obj.get("type") or "") for obj in metadata.get("metaObjects", []) if "id" in obj}


def element_name_and_type(model_id: str, entity_id: str) -> tuple[str, str]:
    """The element's Name and IFC class as the last conversion read them, ("", "") when unknown."""
    path = model_file(model_id, METADATA_FILE)
    try:
        version = path.stat().st_mtime_ns
        with _cache_lock:
            return _elements_from_metadata(str(path), version).get(entity_id, ("", ""))
    except (OSError, ValueError):
        return ("", "")


def element_ifc_value(model_id: str, entity_id: str, field: str) -> str:
    """The element's value of a whitelisted field in the IFC (as the last conversion read it), "" when it has none:
    element-values.json of the conversion (Description and Classification included), else metadata.json."""
    for name, reader in ((ELEMENT_VALUES_FILE, _values_from_sidecar), (METADATA_FILE, _values_from_metadata)):
        path = model_file(model_id, name)
        try:
            version = path.stat().st_mtime_ns
        except FileNotFoundError:
            continue
        with _cache_lock:
            try:
                values = reader(str(path), version)
            except (OSError, ValueError):
                continue
        return str(values.get(entity_id, {}).get(field, ""))
    return ""


def element_bounds(model_id: str, entity_ids: set[str]) -> dict[str, list[float]]:
    """The bounds ([min x, y, z, max x, y, z], IFC world coordinates) of those elements that the last conversion wrote
    bounds for; none for conversions without element-bounds.json (older ones, the web-ifc fallback)."""
    if not entity_ids:
        return {}  # the file holds every element of the model: not read for nothing
    try:
        bounds = orjson.loads(model_file(model_id, ELEMENT_BOUNDS_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return {guid: bounds[guid] for guid in entity_ids if guid in bounds}


def _timestamp(value: str | datetime.datetime | None) -> str | None:
    """ISO 8601 UTC ending in Z, as DRF writes it, from SQLite's UTC text or PostgreSQL's aware datetime."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.replace(" ", "T", 1) + "Z"
    return value.astimezone(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


_rendered_lists: OrderedDict[tuple, bytes] = OrderedDict()
RENDERED_LISTS_KEPT = 64


def issue_list_json(model_id: str, filters: dict | None = None) -> bytes:
    """The model's issues, newest first, as the JSON of IssueSerializer(many=True). A list of a thousand issues is
    read often and changes rarely: it is built straight from the rows (the ORM's per-row conversions and a JSON
    parse and dump of each camera cost many times the query) and kept while the rows' count and newest change stay
    the same, which one indexed query tells, in any process. So every write must set updated_at to the current time
    (auto_now does; never write an older one, or a delete plus an insert could look unchanged).
    filters: status, priority, assignedTo, topicType, stage, entityId (equal), label (one of the labels), q (text in
    title, comment, entityName or id, case-insensitive)."""
    filters = {name: value for name, value in (filters or {}).items() if value is not None}
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*), MAX(updated_at) FROM {Issue._meta.db_table} WHERE model_id = %s", [model_id])
        key = (model_id, *cursor.fetchone(), tuple(sorted(filters.items())))
    with _cache_lock:
        if key in _rendered_lists:
            _rendered_lists.move_to_end(key)
            return _rendered_lists[key]
    rendered = _render_issue_list(model_id, filters)
    with _cache_lock:
        _rendered_lists[key] = rendered
        while len(_rendered_lists) > RENDERED_LISTS_KEPT:
            _rendered_lists.popitem(last=False)
    return rendered


def _render_issue_list(model_id: str, filters: dict) -> bytes:
    sql, params = _issue_list_sql(connection.vendor, filters)
    with connection.cursor() as cursor:
        cursor.execute(sql, [model_id, *params])
        rows = cursor.fetchall()
    label = filters.get("label")
    issues = []
    for row in rows:
        issue = dict(zip(ISSUE_COLUMNS, row))
        if label is not None:
            labels = orjson.loads(issue["labels"]) if isinstance(issue["labels"], str) else issue["labels"]
            if label not in labels:
                continue
        issue["provenance"] = {"source": issue["provenance"]}
        for name in JSON_FIELDS:  # SQLite gives JSON text, written as it is; PostgreSQL gives the values
            value = issue[name]
            issue[name] = orjson.Fragment(value) if isinstance(value, str) else value
        for name in TIMESTAMP_FIELDS:
            issue[name] = _timestamp(issue[name])
        for name in BOOLEAN_FIELDS:
            issue[name] = bool(issue[name])
        issues.append(issue)
    return orjson.dumps(issues)


# --- issues, comments, overrides and change entries of a model --------------------------------------------------


def issue_list(model_id: str):
    return model_get(model_id).issues.order_by("-created_at")


def issue_list_json_data(model_id: str, filters: dict | None = None) -> bytes:
    """The JSON of the model's issues as the API shows them, newest first, optionally filtered (selectors)."""
    return issue_list_json(model_get(model_id).id, filters or {})


def issue_get(model_id: str, issue_id: str) -> Issue:
    model = model_get(model_id)
    return get_or_not_found(
        model.issues, pk=issue_id, well_formed=bool(ISSUE_ID_RE.match(issue_id or "")),
        invalid=f"invalid issue id {issue_id!r}: expected i_ followed by 12 lowercase hex digits",
        missing=f"issue {issue_id} not found in model {model.id}",
    )


def comment_of_issue(issue: Issue, comment_id: str) -> Comment:
    return get_or_not_found(
        issue.comments, guid=comment_id, well_formed=bool(GUID_RE.match(comment_id or "")),
        invalid=f"invalid comment id {comment_id!r}: expected a lowercase UUID (8-4-4-4-12 hex digits)",
        missing=f"comment {comment_id} not found in issue {issue.id}",
    )


def comment_list(model_id: str, issue_id: str):
    return issue_get(model_id, issue_id).comments.order_by("date", "id")


def comment_get(model_id: str, issue_id: str, comment_id: str) -> Comment:
    return comment_of_issue(issue_get(model_id, issue_id), comment_id)


def screenshot_file(model_id: str, file_name: str) -> Path:
    """Path of an issue image (screenshot, viewpoint snapshot or bitmap); the name must match the image pattern
    exactly (no path tricks reach the disk)."""
    model = model_get(model_id)
    if not IMAGE_NAME_RE.match(file_name or ""):
        raise NotFound(f"invalid image name {file_name!r}: expected i_<12 hex>.png or i_<12 hex>-<12 hex>.png|jpg")
    path = issues_folder(model.id) / file_name
    if not path.is_file():
        raise NotFound(f"image {file_name} not found")
    return path


def overrides_of_model(model_id: str) -> dict[str, dict[str, str]]:
    """The model's overrides as {entityId: {field: value}}, {} when it has none."""
    overrides: dict[str, dict[str, str]] = {}
    for override in model_get(model_id).overrides.order_by("entity_id", "field"):
        overrides.setdefault(override.entity_id, {})[override.field] = override.value
    return overrides


def change_entries_of_model(model_id: str):
    """The model's change entries, newest first."""
    return model_get(model_id).changes.order_by("-created_at", "-seq")
