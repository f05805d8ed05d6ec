"""Use cases of a project's clash tests: define or change one (PUT), delete one. A test names set A and optionally
set B, each a list of the project's models with an IFC class filter and an exclusion (a class counts its
subclasses), a kind (hard, clearance, duplicate) and its thresholds. Everything is checked before anything is
written; a bad field answers 40001 naming it (a.models, b.classes, tolerance ...).

    >>> clash_test_put(project_id="p_0123456789abcdef", name="ducts-vs-beams", by="ana", a={"models": ["m_…"],
    ...     "classes": ["IfcDuctSegment"]}, b={"models": ["m_…"], "classes": ["IfcBeam"]}, kind="hard")
    (<ClashTest: p_0123456789abcdef/ducts-vs-beams>, True)
"""

from __future__ import annotations

import re

from django.db import transaction

from coordination_app.engine import selection
from coordination_app.models import TEST_NAME_PATTERN, ClashTest
from core.errors import Invalid, NotFound
from models_app.models import IfcModel, Project
from models_app.public import METADATA_FILE, model_file
from models_app.selectors import project_get, project_of_model

TEST_NAME_RE = re.compile(rf"^{TEST_NAME_PATTERN}$")
SCHEMA_RE = re.compile(rb'"schema"\s*:\s*"([A-Za-z0-9_]+)"')
DEFAULT_SCHEMA = "IFC4"
SET_KEYS = ("models", "classes", "exclude")


def invalid(field: str, message: str) -> Invalid:
    """40001 naming the field first (as the API edge names a serializer's first failing field)."""
    return Invalid(f"{field}: {message}", data={field: [message]})


def model_schema(model_id: str) -> str:
    """The IFC schema of the model's last conversion, read from the head of its metadata.json (written first);
    IFC4 before any conversion."""
    try:
        with open(model_file(model_id, METADATA_FILE), "rb") as handle:
            found = SCHEMA_RE.search(handle.read(4096))
    except (FileNotFoundError, ValueError):
        return DEFAULT_SCHEMA
    return found.group(1).decode() if found else DEFAULT_SCHEMA


def _class_names(field: str, value, *, allow_empty: bool) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(name, str) and name.strip() for name in value):
        raise invalid(field, "a list of IFC class names (e.g. [\"IfcDuctSegment\"])")
    if not value and not allow_empty:
        raise invalid(field, "an empty class list selects nothing: leave it out to take every class")
    return list(dict.fromkeys(name.strip() for name in value))


def _models_checked(field: str, value, project: Project) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(model_id, str) for model_id in value):
        raise invalid(field, "a list of model ids")
    if not value:
        raise invalid(field, "an empty set: name at least one model of the project")
    model_ids = list(dict.fromkeys(value))
    known = set(IfcModel.objects.filter(pk__in=model_ids).values_list("id", flat=True))
    for model_id in model_ids:
        if model_id not in known:
            raise invalid(field, f"unknown model {model_id!r}")
        owner = project_of_model(model_id)
        if owner != project.id:
            raise invalid(field, f"model {model_id} is not a model of project {project.id}" + (" (it belongs to another project)" if owner else ""))
    return model_ids


def _set_checked(field: str, value, project: Project) -> dict:
    """One side of a test: {models, classes (None: every class), exclude}."""
    if not isinstance(value, dict):
        raise invalid(field, "an object {models, classes?, exclude?}")
    unknown_keys = sorted(set(value) - set(SET_KEYS))
    if unknown_keys:
        raise invalid(f"{field}.{unknown_keys[0]}", f"unknown field (a set has {', '.join(SET_KEYS)})")
    model_ids = _models_checked(f"{field}.models", value.get("models"), project)
    classes = _class_names(f"{field}.classes", value.get("classes"), allow_empty=False)
    exclude = _class_names(f"{field}.exclude", value.get("exclude"), allow_empty=True) or []
    schemas = sorted({model_schema(model_id) for model_id in model_ids})
    for key, names in (("classes", classes or []), ("exclude", exclude)):
        # unknown in every schema of the set's models (IfcBuildingElement is IFC2X3/IFC4, IfcBuiltElement IFC4X3)
        unknown = [name for name in names if all(name in selection.unknown_classes([name], schema) for schema in schemas)]
        if unknown:
            raise invalid(f"{field}.{key}", f"unknown IFC class {unknown[0]!r} (schema {', '.join(schemas)})")
    return {"models": model_ids, "classes": classes, "exclude": exclude}


def clash_test_put(*, project_id: str, name: str, a, b=None, kind: str = ClashTest.Kind.HARD, tolerance: float = 0.01,
                   distance: float = 0.0, automatic: bool = False, by: str = "") -> tuple[ClashTest, bool]:
    """Creates or replaces the project's test `name`; True when it was created. The test's runs and clashes stay
    (a clash's id depends on the test's name and the two GlobalIds only)."""
    project = project_get(project_id)
    if not TEST_NAME_RE.match(name or ""):
        raise invalid("name", f"{name!r}: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64")
    if kind not in ClashTest.Kind.values:
        raise invalid("type", f"{kind!r} is not one of {', '.join(ClashTest.Kind.values)}")
    for field, value in (("tolerance", tolerance), ("distance", distance)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (float("inf"), float("-inf")):
            raise invalid(field, "a number of metres")
        if value < 0:
            raise invalid(field, f"{value} is negative: a number of metres >= 0")
    if kind == ClashTest.Kind.CLEARANCE and distance <= 0:
        raise invalid("distance", "a clearance test needs a distance > 0 (metres)")
    side_a = _set_checked("a", a, project)
    side_b = None if b is None else _set_checked("b", b, project)
    fields = {"a": side_a, "b": side_b, "kind": kind, "tolerance": float(tolerance), "distance": float(distance), "automatic": bool(automatic)}
    with transaction.atomic():
        test, created = ClashTest.objects.select_for_update().get_or_create(project=project, name=name, defaults={**fields, "created_by": by})
        if not created:
            for key, value in fields.items():
                setattr(test, key, value)
            test.save()
    return test, created


def clash_test_delete(*, project_id: str, name: str) -> None:
    """Deletes the test with its runs and clashes (queued runs go with it; a running one finds its row gone)."""
    project = project_get(project_id)
    deleted, _ = ClashTest.objects.filter(project=project, name=name).delete()
    if not deleted:
        raise NotFound(f"project {project.id} has no clash test {name!r}")
