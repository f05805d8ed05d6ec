"""Viewpoints made by the server for a set of elements (the failing elements of an IDS specification pinned as an
issue; later clashes and BCF-API topics): the elements selected, every element visible, and a perspective camera
framing them from above the south-west (a three-quarter view, Z up, as BCF has it).

The boxes are the elements' world bounds the model's conversion wrote (element-bounds.json, metres, Z up); an
element without one (a conversion without the file, a saved version's element the current model lost) is framed
by a point the caller knows, its placement origin. Only the first FRAMED_ELEMENTS elements are framed; all are
selected."""

from __future__ import annotations

import uuid

from issues_app.bcf import camera_at_bounds
from issues_app.selectors import element_bounds
from issues_app.viewpoints import IFC_GUID_RE, clean_viewpoint

FRAMED_ELEMENTS = 500
POINT_MARGIN = 1.0  # metres around an element known only by a point


def union_bounds(boxes: list[list[float]]) -> list[float] | None:
    """The box [min x, y, z, max x, y, z] around all the boxes; None for none."""
    if not boxes:
        return None
    return [min(box[axis] for box in boxes) for axis in range(3)] + [max(box[axis + 3] for box in boxes) for axis in range(3)]


def point_box(point: list[float]) -> list[float]:
    return [value - POINT_MARGIN for value in point[:3]] + [value + POINT_MARGIN for value in point[:3]]


def framed(guids: list[str]) -> list[str]:
    """The elements a camera frames: the first FRAMED_ELEMENTS distinct ones."""
    return list(dict.fromkeys(guids))[:FRAMED_ELEMENTS]


def element_boxes(model_id: str, guids: set[str], points: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    """GlobalId -> world box of those elements that have one: the box of the model's current conversion, else a box
    around the element's point (points: GlobalId -> [x, y, z]). One read of the conversion's bounds for all."""
    bounds = element_bounds(model_id, guids)
    points = points or {}
    return {element: bounds[element] if element in bounds else point_box(points[element]) for element in guids if element in bounds or element in points}


def viewpoint_for_elements(guids: list[str], boxes: dict[str, list[float]], *, guid: str) -> dict | None:
    """A BCF-API 3.0 viewpoint (as issues_app.viewpoints stores it) selecting the elements (IFC GlobalIds; others are
    left out) with a camera framing the boxes of the framed ones; None when none has a box (BCF needs a camera)."""
    camera = camera_at_bounds(union_bounds([boxes[element] for element in framed(guids) if element in boxes]))
    if camera is None:
        return None
    selection = [{"ifc_guid": element} for element in dict.fromkeys(guids) if IFC_GUID_RE.match(element)]
    raw = {
        "guid": guid, "perspective_camera": camera,
        "components": {"selection": selection, "visibility": {"default_visibility": True, "exceptions": []}, "coloring": []},
    }
    return clean_viewpoint(raw, "viewpoint", set(), lambda: str(uuid.uuid4()))


def model_elements_viewpoint(model_id: str, guids: list[str], *, guid: str, points: dict[str, list[float]] | None = None) -> dict | None:
    """viewpoint_for_elements with the boxes of the model's elements (element_boxes)."""
    return viewpoint_for_elements(guids, element_boxes(model_id, set(framed(guids)), points), guid=guid)
