"""Viewpoints of review issues in the buildingSMART BCF-API 3.0 JSON form, as xeokit's BCFViewpointsPlugin reads and
writes them; knows nothing of HTTP or the database.

A stored viewpoint (the API shows it as stored):

    {guid, perspective_camera: {camera_view_point: {x, y, z}, camera_direction, camera_up_vector, field_of_view,
     aspect_ratio} | null, orthogonal_camera: {..., view_to_world_scale, aspect_ratio} | null,
     lines: [{start_point, end_point}], clipping_planes: [{location, direction}],
     bitmaps: [{bitmap_type, bitmap_url, location, normal, up, height}],
     snapshot: {snapshot_type, snapshot_url} | null,
     components: {selection: [component], visibility: {default_visibility, exceptions: [component],
                  view_setup_hints: {spaces_visible, space_boundaries_visible, openings_visible} | null} | null,
                  coloring: [{color, components: [component]}]} | null}

with component = {ifc_guid?, originating_system?, authoring_tool_id?} (absent keys left out). Images (snapshot, bitmaps)
are files served by URL; on input they come as data (`snapshot_data`, `bitmap_data`: base64 or a data: URL) or as the
URL of a file the issue already has. `clean_viewpoints` checks input and returns viewpoints whose new images are
`PendingImage`s for the caller to store.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from dataclasses import dataclass
from typing import Callable

from core.limits import SCREENSHOT_MAX_BYTES

GUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
IFC_GUID_RE = re.compile(r"^[0-9A-Za-z_$]{22}$")
COLOR_RE = re.compile(r"^[0-9A-Fa-f]{6}([0-9A-Fa-f]{2})?$")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
JPEG_SIGNATURE = b"\xff\xd8\xff"
IMAGE_TYPES = ("png", "jpg")
MAX_VIEWPOINTS = 100
MAX_COMPONENTS = 200_000  # per viewpoint, all lists together
MAX_GEOMETRY_ITEMS = 10_000  # lines, clipping planes or bitmaps per viewpoint
MAX_TEXT = 255
# what xeokit's getViewpoint() writes beyond BCF 3.0: accepted, not kept (BCF-XML 3.0 has no place for it)
IGNORED_KEYS = {"index", "translucency", "spaces_translucent", "space_boundaries_translucent", "openings_translucent"}


class ViewpointError(ValueError):
    """The viewpoint input is invalid; the message names the offending key path."""


@dataclass
class PendingImage:
    """An image to store for a viewpoint: its type and how to write its bytes into an open binary file."""

    image_type: str
    write: Callable


def image_type_of(head: bytes) -> str | None:
    if head.startswith(PNG_SIGNATURE):
        return "png"
    if head.startswith(JPEG_SIGNATURE):
        return "jpg"
    return None


def _fail(path: str, message: str):
    raise ViewpointError(f"{path}: {message}")


def _object(value, path: str, allowed: set[str], required: set[str] = frozenset()) -> dict:
    if not isinstance(value, dict):
        _fail(path, "must be an object")
    unknown = sorted(set(value) - allowed - IGNORED_KEYS)
    if unknown:
        _fail(path, f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})")
    missing = sorted(key for key in required if value.get(key) is None)
    if missing:
        _fail(path, f"missing {', '.join(missing)}")
    return value


def _list(value, path: str, limit: int) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        _fail(path, "must be a list")
    if len(value) > limit:
        _fail(path, f"at most {limit} items")
    return value


def _number(value, path: str, *, positive: bool = False, below: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        _fail(path, "must be a finite number")
    if positive and value <= 0:
        _fail(path, "must be greater than 0")
    if below is not None and value >= below:
        _fail(path, f"must be less than {below:g}")
    return float(value)


def _text(value, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        _fail(path, "must be a non-blank string")
    if len(value) > MAX_TEXT:
        _fail(path, f"at most {MAX_TEXT} characters")
    return value


def _bool(value, path: str) -> bool:
    if not isinstance(value, bool):
        _fail(path, "must be true or false")
    return value


def _vector(value, path: str) -> dict:
    _object(value, path, {"x", "y", "z"}, {"x", "y", "z"})
    return {axis: _number(value[axis], f"{path}.{axis}") for axis in "xyz"}


def _camera(value, path: str, kind: str) -> dict | None:
    if value is None:
        return None
    last = "field_of_view" if kind == "perspective" else "view_to_world_scale"
    keys = {"camera_view_point", "camera_direction", "camera_up_vector", last, "aspect_ratio"}
    _object(value, path, keys, keys - {"aspect_ratio"})
    camera = {key: _vector(value[key], f"{path}.{key}") for key in ("camera_view_point", "camera_direction", "camera_up_vector")}
    if not any(camera["camera_direction"].values()):
        _fail(f"{path}.camera_direction", "must not be the zero vector")
    if kind == "perspective":
        camera[last] = _number(value[last], f"{path}.{last}", positive=True, below=180)
    else:
        camera[last] = _number(value[last], f"{path}.{last}")
    # xeokit's getViewpoint() writes no aspect ratio; BCF requires one
    camera["aspect_ratio"] = 1.0 if value.get("aspect_ratio") is None else _number(value["aspect_ratio"], f"{path}.aspect_ratio", positive=True)
    return camera


def _components(value, path: str, budget: list[int]) -> list[dict]:
    items = _list(value, path, MAX_COMPONENTS)
    budget[0] -= len(items)
    if budget[0] < 0:
        _fail(path, f"a viewpoint has at most {MAX_COMPONENTS} components in all")
    cleaned = []
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        _object(item, where, {"ifc_guid", "originating_system", "authoring_tool_id"})
        component = {}
        if item.get("ifc_guid") is not None:
            if not isinstance(item["ifc_guid"], str) or not IFC_GUID_RE.match(item["ifc_guid"]):
                _fail(f"{where}.ifc_guid", "must be an IFC GlobalId (22 characters of 0-9, A-Z, a-z, _ and $)")
            component["ifc_guid"] = item["ifc_guid"]
        for key in ("originating_system", "authoring_tool_id"):
            if item.get(key) is not None:
                component[key] = _text(item[key], f"{where}.{key}")
        if "ifc_guid" not in component and "authoring_tool_id" not in component:
            _fail(where, "needs ifc_guid or authoring_tool_id")
        cleaned.append(component)
    return cleaned


def _components_block(value, path: str) -> dict | None:
    if value is None:
        return None
    _object(value, path, {"selection", "visibility", "coloring"})
    budget = [MAX_COMPONENTS]
    visibility = None
    if value.get("visibility") is not None:
        raw = _object(value["visibility"], f"{path}.visibility", {"default_visibility", "exceptions", "view_setup_hints"})
        hints = None
        if raw.get("view_setup_hints") is not None:
            where = f"{path}.visibility.view_setup_hints"
            keys = ("spaces_visible", "space_boundaries_visible", "openings_visible")
            _object(raw["view_setup_hints"], where, set(keys))
            hints = {key: _bool(raw["view_setup_hints"].get(key, False), f"{where}.{key}") for key in keys}
        visibility = {
            "default_visibility": _bool(raw.get("default_visibility", False), f"{path}.visibility.default_visibility"),
            "exceptions": _components(raw.get("exceptions"), f"{path}.visibility.exceptions", budget),
            "view_setup_hints": hints,
        }
    coloring = []
    for index, item in enumerate(_list(value.get("coloring"), f"{path}.coloring", MAX_GEOMETRY_ITEMS)):
        where = f"{path}.coloring[{index}]"
        _object(item, where, {"color", "components"}, {"color", "components"})
        if not isinstance(item["color"], str) or not COLOR_RE.match(item["color"]):
            _fail(f"{where}.color", "must be 6 or 8 hex digits (RRGGBB or AARRGGBB)")
        components = _components(item["components"], f"{where}.components", budget)
        if not components:
            _fail(f"{where}.components", "needs at least one component")
        coloring.append({"color": item["color"], "components": components})
    return {"selection": _components(value.get("selection"), f"{path}.selection", budget), "visibility": visibility, "coloring": coloring}


def decode_image(data, declared_type, path: str) -> PendingImage:
    """Base64 (or a data: URL) of a PNG or JPEG of at most 5 MB, whose bytes match the declared type."""
    if not isinstance(data, str) or not data:
        _fail(path, "must be base64 text or a data: URL")
    if data.startswith("data:"):
        data = data.partition(",")[2]
    if len(data) > SCREENSHOT_MAX_BYTES * 4 // 3 + 8:
        _fail(path, "the image is larger than 5 MB")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        _fail(path, "is not valid base64")
    actual = image_type_of(raw[:8])
    if actual is None:
        _fail(path, "is neither a PNG nor a JPEG image")
    if declared_type is not None and {"jpeg": "jpg"}.get(declared_type, declared_type) != actual:
        _fail(path, f"the data is a {actual.upper()} image, the type says {declared_type!r}")
    return PendingImage(actual, lambda handle: handle.write(raw))


def _image(value, path: str, prefix: str, kept_urls: set[str]):
    """A snapshot or bitmap image: new data, or the URL of an image the issue has."""
    type_key, data_key, url_key = f"{prefix}_type", f"{prefix}_data", f"{prefix}_url"
    declared = value.get(type_key)
    if declared is not None and declared not in (*IMAGE_TYPES, "jpeg"):
        _fail(f"{path}.{type_key}", "must be png or jpg")
    if value.get(data_key) is not None:
        return decode_image(value[data_key], declared, f"{path}.{data_key}")
    url = value.get(url_key)
    if url is None:
        _fail(path, f"needs {data_key} (base64 image) or {url_key} (an image of this issue)")
    if url not in kept_urls:
        _fail(f"{path}.{url_key}", "is not an image of this issue")
    return url


def _snapshot(value, path: str, kept_urls: set[str]):
    if value is None:
        return None
    _object(value, path, {"snapshot_type", "snapshot_data", "snapshot_url"})
    image = _image(value, path, "snapshot", kept_urls)
    if isinstance(image, PendingImage):
        return {"snapshot_type": image.image_type, "pending": image}
    return {"snapshot_type": image_type_from_url(image), "snapshot_url": image}


def image_type_from_url(url: str) -> str:
    return "jpg" if url.endswith(".jpg") else "png"


def _bitmap(value, path: str, kept_urls: set[str]) -> dict:
    keys = {"bitmap_type", "bitmap_data", "bitmap_url", "location", "normal", "up", "height"}
    _object(value, path, keys, {"location", "normal", "up", "height"})
    image = _image(value, path, "bitmap", kept_urls)
    bitmap = {"bitmap_type": image.image_type if isinstance(image, PendingImage) else image_type_from_url(image)}
    bitmap.update({"pending": image} if isinstance(image, PendingImage) else {"bitmap_url": image})
    for key in ("location", "normal", "up"):
        bitmap[key] = _vector(value[key], f"{path}.{key}")
    bitmap["height"] = _number(value["height"], f"{path}.height")
    return bitmap


VIEWPOINT_KEYS = {"guid", "perspective_camera", "orthogonal_camera", "lines", "clipping_planes", "bitmaps", "snapshot", "components"}


def clean_viewpoint(value, path: str, kept_urls: set[str], new_guid: Callable[[], str]) -> dict:
    _object(value, path, VIEWPOINT_KEYS)
    guid = value.get("guid")
    if guid is None:
        guid = new_guid()
    elif not isinstance(guid, str) or not GUID_RE.match(guid):
        _fail(f"{path}.guid", "must be a lowercase UUID (8-4-4-4-12 hex digits)")
    perspective = _camera(value.get("perspective_camera"), f"{path}.perspective_camera", "perspective")
    orthogonal = _camera(value.get("orthogonal_camera"), f"{path}.orthogonal_camera", "orthogonal")
    if (perspective is None) == (orthogonal is None):
        _fail(path, "needs exactly one of perspective_camera and orthogonal_camera")
    lines = []
    for index, item in enumerate(_list(value.get("lines"), f"{path}.lines", MAX_GEOMETRY_ITEMS)):
        where = f"{path}.lines[{index}]"
        _object(item, where, {"start_point", "end_point"}, {"start_point", "end_point"})
        lines.append({key: _vector(item[key], f"{where}.{key}") for key in ("start_point", "end_point")})
    planes = []
    for index, item in enumerate(_list(value.get("clipping_planes"), f"{path}.clipping_planes", MAX_GEOMETRY_ITEMS)):
        where = f"{path}.clipping_planes[{index}]"
        _object(item, where, {"location", "direction"}, {"location", "direction"})
        planes.append({key: _vector(item[key], f"{where}.{key}") for key in ("location", "direction")})
    bitmaps = [_bitmap(item, f"{path}.bitmaps[{index}]", kept_urls) for index, item in enumerate(_list(value.get("bitmaps"), f"{path}.bitmaps", MAX_GEOMETRY_ITEMS))]
    return {
        "guid": guid, "perspective_camera": perspective, "orthogonal_camera": orthogonal, "lines": lines, "clipping_planes": planes,
        "bitmaps": bitmaps, "snapshot": _snapshot(value.get("snapshot"), f"{path}.snapshot", kept_urls),
        "components": _components_block(value.get("components"), f"{path}.components"),
    }


def clean_viewpoints(value, *, kept_urls: set[str], new_guid: Callable[[], str]) -> list[dict]:
    """Checked viewpoints (their order kept); raises ViewpointError."""
    items = _list(value, "viewpoints", MAX_VIEWPOINTS)
    viewpoints = [clean_viewpoint(item, f"viewpoints[{index}]", kept_urls, new_guid) for index, item in enumerate(items)]
    guids = [viewpoint["guid"] for viewpoint in viewpoints]
    duplicates = sorted({guid for guid in guids if guids.count(guid) > 1})
    if duplicates:
        raise ViewpointError(f"viewpoints: guid {duplicates[0]} appears more than once")
    return viewpoints


def pending_images(viewpoint: dict) -> list[dict]:
    """The snapshot and bitmap entries of a viewpoint whose image is still to be stored."""
    entries = [viewpoint["snapshot"]] if viewpoint.get("snapshot") else []
    entries += viewpoint.get("bitmaps") or []
    return [entry for entry in entries if "pending" in entry]


def image_urls(viewpoints: list[dict]) -> set[str]:
    urls = set()
    for viewpoint in viewpoints:
        if viewpoint.get("snapshot") and viewpoint["snapshot"].get("snapshot_url"):
            urls.add(viewpoint["snapshot"]["snapshot_url"])
        urls.update(bitmap["bitmap_url"] for bitmap in viewpoint.get("bitmaps") or () if bitmap.get("bitmap_url"))
    return urls


def camera_of(viewpoint: dict) -> dict | None:
    """The issue's {eye, look, up} camera from a viewpoint's camera (look = eye + direction)."""
    camera = viewpoint.get("perspective_camera") or viewpoint.get("orthogonal_camera")
    if not camera:
        return None
    eye, direction, up = (camera[key] for key in ("camera_view_point", "camera_direction", "camera_up_vector"))
    return {"eye": [eye[a] for a in "xyz"], "look": [eye[a] + direction[a] for a in "xyz"], "up": [up[a] for a in "xyz"]}


def selected_guid(viewpoint: dict) -> str:
    for component in ((viewpoint.get("components") or {}).get("selection") or ()):
        if component.get("ifc_guid"):
            return component["ifc_guid"]
    return ""
