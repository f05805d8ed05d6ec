"""Use cases of the plan files: read, write (one version per write), history, diff. Views and the agent call these;
the delivery is plans_app.use_cases.deliver."""

from __future__ import annotations

import hashlib
import json
from datetime import timezone

from django.db import transaction

from core.errors import Conflict, Invalid, NotFound
from core.provenance import DEFAULT_AUTHOR, Provenance
from models_app.models import Project
from models_app.selectors import project_get
from plans_app import validation
from plans_app.diff import diff_states
from plans_app.models import PLAN_FILES, PlanVersion


def _check_name(name: str) -> None:
    if name not in PLAN_FILES:
        raise NotFound(f"no plan file {name!r}; the files are {', '.join(PLAN_FILES)}")


def latest_version(project: Project) -> PlanVersion | None:
    return project.plan_versions.order_by("-number").first()


def _canonical(document) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


def plan_file_get(*, project_id: str, name: str) -> tuple[dict | None, str | None]:
    """(document, version label) of a plan file: its value in the newest version; (None, None) before any write."""
    _check_name(name)
    latest = latest_version(project_get(project_id))
    return (getattr(latest, name), latest.label) if latest else (None, None)


def check_document(name: str, document) -> None:
    if not isinstance(document, dict):
        raise Invalid(f"{name} $: must be a JSON object", data={"errors": [{"file": name, "path": "$", "message": "must be a JSON object"}]})
    errors = validation.schema_errors(name, document)
    if errors:
        first = errors[0]
        raise Invalid(f"{first['file']} {first['path']}: {first['message']}", data={"errors": errors})


def write_version(project: Project, files: dict, *, changed: list[str], author: str, provenance: str, operation: str, note: str = "") -> PlanVersion:
    """One new version holding `files` over the newest state; call inside a transaction holding the project row."""
    latest = latest_version(project)
    state = latest.files() if latest else dict.fromkeys(PLAN_FILES)
    return PlanVersion.objects.create(
        project=project, number=(latest.number + 1 if latest else 1), changed=changed, **{**state, **files},
        author=author, provenance=provenance, operation=operation, note=note,
    )


def plan_file_put(*, project_id: str, name: str, document, author: str = DEFAULT_AUTHOR, provenance: str = Provenance.UI.value, if_match: str | None = None) -> dict:
    """Full replace of one plan file, validated against its schema; identical content writes nothing."""
    _check_name(name)
    project = project_get(project_id)
    check_document(name, document)
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project.pk)
        latest = latest_version(project)
        current_label = latest.label if latest else None
        if if_match is not None and if_match.strip('"') != (current_label or ""):
            raise Conflict(f"{name} changed meanwhile: the newest version is {current_label}, not {if_match}")
        if latest is not None and getattr(latest, name) is not None and _canonical(getattr(latest, name)) == _canonical(document):
            return {"name": name, "version": latest.label, "changed": False}
        version = write_version(project, {name: document}, changed=[name], author=author, provenance=provenance, operation=PlanVersion.Operation.PUT)
    return {"name": name, "version": version.label, "changed": True}


def plan_history(*, project_id: str) -> dict:
    project = project_get(project_id)
    versions = [
        {"version": v.label, "changed": v.changed, "operation": v.operation, "author": v.author, "provenance": {"source": v.provenance},
         "note": v.note, "createdAt": v.created_at.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")}
        for v in project.plan_versions.order_by("number")
    ]
    return {"versions": versions, "current": versions[-1]["version"] if versions else None}


def _state(project: Project, label: str) -> dict:
    if label == "current":
        latest = latest_version(project)
        return latest.files() if latest else dict.fromkeys(PLAN_FILES)
    if not (label.startswith("v") and label[1:].isdigit()):
        raise Invalid(f"a version is v<n> or current, not {label!r}")
    version = project.plan_versions.filter(number=int(label[1:])).first()
    if version is None:
        raise NotFound(f"plan version {label} not found")
    return version.files()


def plan_diff(*, project_id: str, base: str, target: str) -> dict:
    project = project_get(project_id)
    return {"base": base, "target": target, **diff_states(_state(project, base), _state(project, target))}
