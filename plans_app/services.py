"""Use cases of the plan files: read, write (one version per write), history, diff, deliver. Views and the agent
call these."""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import datetime, timezone

from django.db import transaction

from chat_app import events
from chat_app.models import ChatSession, Project
from chat_app.selectors import project_get
from models_app.script_services import PROXY_ROUTES, forward
from models_app.services import model_metadata
from plans_app import validation
from plans_app.diff import diff_states
from plans_app.models import PLAN_FILES, PlanVersion
from viewer_gateway.envelope import ApiError, Conflict, InvalidInput, NotFound
from viewer_gateway.provenance import DEFAULT_AUTHOR, Provenance

logger = logging.getLogger(__name__)
ROUTES = {route.route: route for route in PROXY_ROUTES}
DESIGN_PSET = "ScriptLib_Design"


def _check_name(name: str) -> None:
    if name not in PLAN_FILES:
        raise NotFound(f"no plan file {name!r}; the files are {', '.join(PLAN_FILES)}")


def _latest(project: Project) -> PlanVersion | None:
    return project.plan_versions.order_by("-number").first()


def _canonical(document) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


def plan_file_get(*, project_id: str, name: str) -> tuple[dict | None, str | None]:
    """(document, version label) of a plan file: its value in the newest version; (None, None) before any write."""
    _check_name(name)
    latest = _latest(project_get(project_id))
    return (getattr(latest, name), latest.label) if latest else (None, None)


def check_document(name: str, document) -> None:
    if not isinstance(document, dict):
        raise InvalidInput(f"{name} $: must be a JSON object", data={"errors": [{"file": name, "path": "$", "message": "must be a JSON object"}]})
    errors = validation.schema_errors(name, document)
    if errors:
        first = errors[0]
        raise InvalidInput(f"{first['file']} {first['path']}: {first['message']}", data={"errors": errors})


def _write_version(project: Project, files: dict, *, changed: list[str], author: str, provenance: str, operation: str, note: str = "") -> PlanVersion:
    """One new version holding `files` over the newest state; call inside a transaction holding the project row."""
    latest = _latest(project)
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
        latest = _latest(project)
        current_label = latest.label if latest else None
        if if_match is not None and if_match.strip('"') != (current_label or ""):
            raise Conflict(f"{name} changed meanwhile: the newest version is {current_label}, not {if_match}")
        if latest is not None and getattr(latest, name) is not None and _canonical(getattr(latest, name)) == _canonical(document):
            return {"name": name, "version": latest.label, "changed": False}
        version = _write_version(project, {name: document}, changed=[name], author=author, provenance=provenance, operation=PlanVersion.Operation.PUT)
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
        latest = _latest(project)
        return latest.files() if latest else dict.fromkeys(PLAN_FILES)
    if not (label.startswith("v") and label[1:].isdigit()):
        raise InvalidInput(f"a version is v<n> or current, not {label!r}")
    version = project.plan_versions.filter(number=int(label[1:])).first()
    if version is None:
        raise NotFound(f"plan version {label} not found")
    return version.files()


def plan_diff(*, project_id: str, base: str, target: str) -> dict:
    project = project_get(project_id)
    return {"base": base, "target": target, **diff_states(_state(project, base), _state(project, target))}


# --- deliver -----------------------------------------------------------------------------------------------------


def _project_ifc_model(project: Project) -> str:
    model_id = project.projectmodel_set.order_by("id").values_list("model_id", flat=True).first()
    if model_id is None:
        raise InvalidInput("the project has no model to deliver into yet")
    return model_id


def _design_keys(model_id: str) -> set[str]:
    try:
        metadata = model_metadata(model_id)
    except NotFound:
        return set()
    keys = set()
    for pset in metadata.get("propertySets", []):
        if pset.get("name") == DESIGN_PSET:
            keys |= {row["value"] for row in pset.get("properties", []) if row.get("name") == "designKey"}
    return keys


def _edit(model_id: str, route: str, method: str, body: dict | None = None):
    return forward(model_id=model_id, route=ROUTES[route], method=method, body=body)


def _build_model(model_id: str, plan: dict, supplement: dict, author: str, provenance: str) -> tuple[str, dict | None]:
    """Writes plan and supplement into the build script's PARAMS and saves a version; returns (version, counts).
    Unchanged PARAMS reuse the latest version. A failed build is discarded (staging was empty before)."""
    if _edit(model_id, "script", "GET").get("source") == "staging":
        raise Conflict("the model has unsaved staged edits: save or discard them before delivering")
    params = _edit(model_id, "script/params", "GET")
    missing = [key for key in ("plan", "bimSupplement") if key not in params]
    if missing:
        raise InvalidInput(f"the model's build script declares no PARAMS {' and '.join(missing)}; a delivery writes them")
    if params["plan"] == plan and params["bimSupplement"] == supplement:
        return _edit(model_id, "edit/versions", "GET")["current"], None
    _edit(model_id, "script", "PUT", {"params": {**params, "plan": plan, "bimSupplement": supplement}, "note": "deliver"})
    try:
        saved = _edit(model_id, "script/save", "POST", {"note": "deliver", "author": author, "provenance": {"source": provenance}})
    except ApiError as exc:
        _discard_quietly(model_id)
        raise InvalidInput(f"the delivery could not be built: {exc.detail}", data=exc.data) from None
    return saved["version"], saved.get("semanticDiff")


def _discard_quietly(model_id: str) -> None:
    try:
        _edit(model_id, "script/discard", "POST")
    except ApiError:
        logger.exception("discarding the failed delivery of %s failed", model_id)


def _requirement_status(requirement: dict, rooms: dict) -> dict:
    room = rooms.get(requirement.get("target", ""))
    if requirement["kind"] == "area" and room is not None and "value" in requirement and "area" in room:
        met = room["area"] >= requirement["value"]
        return {"id": requirement["id"], "status": "met" if met else "unmet", "evidence": f"area {room['area']} {'>=' if met else '<'} {requirement['value']}"}
    return {"id": requirement["id"], "status": "unchecked", "evidence": ""}


def building_document(plan: dict, supplement: dict, *, plan_version: str, model: dict | None, counts: dict | None) -> dict:
    rooms = {room["id"]: room for room in plan.get("rooms", [])}
    return {
        "schema": "building/1",
        "deliveredAt": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "planVersion": plan_version,
        "model": model,
        "storeys": [
            {"id": s["id"], "name": s["name"], "elevation": s["elevation"],
             "rooms": [{"id": r["id"], "name": r["name"], "area": r.get("area"), "designKey": f"space:{r['id']}"} for r in rooms.values() if r["storey"] == s["id"]]}
            for s in plan.get("storeys", [])
        ],
        "elementTypes": {cls: {k: v for k, v in values.items() if k != "psets"} for cls, values in supplement.get("elementTypes", {}).items()},
        "requirements": [_requirement_status(r, rooms) for r in plan.get("requirements", [])],
        "modelChanges": counts,
        "warnings": [f"room {r['id']} has no outline: no IfcSpace was built" for r in rooms.values() if not r.get("outline")],
    }


def deliver(*, project_id: str, plan, bim_supplement, author: str = DEFAULT_AUTHOR, provenance: str = Provenance.UI.value) -> dict:
    """Validates plan and supplement, builds (or updates) the project's model from them through its build script,
    records the delivered building, all as one plan version. Anything that fails leaves nothing written."""
    project = project_get(project_id)
    check_document("plan", plan)
    check_document("bim_supplement", bim_supplement)
    model_id = None if project.kind == Project.Kind.CAD else _project_ifc_model(project)
    known_keys = _design_keys(model_id) | {f"space:{r['id']}" for r in plan.get("rooms", [])} if model_id else None
    errors = validation.cross_reference_errors(plan, bim_supplement, known_keys)
    if errors:
        raise InvalidInput(f"{errors[0]['file']} {errors[0]['path']}: {errors[0]['message']}", data={"errors": errors})
    model, counts = None, None
    if model_id is not None:
        version, counts = _build_model(model_id, plan, bim_supplement, author, provenance)
        model = {"modelId": model_id, "version": version, "format": "ifc"}
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        latest = _latest(locked)
        label = f"v{latest.number + 1 if latest else 1}"
        building = building_document(plan, bim_supplement, plan_version=label, model=model, counts=counts)
        _write_version(locked, {"plan": plan, "bim_supplement": bim_supplement, "building": building},
                       changed=list(PLAN_FILES), author=author, provenance=provenance, operation=PlanVersion.Operation.DELIVER, note="deliver")
    session = ChatSession.objects.filter(project=project).first()
    if session is not None and model is not None:
        events.publish(session.id, "viewer.committed", {"sessionID": session.id, "modelId": model_id, "kind": "ifc", "version": model["version"]})
    return {"version": label, "building": building, "model": model}
