"""Use case: deliver a project, building its models from the plan and the BIM supplement.

A delivery builds the project's models from the plan and the BIM supplement, through their build scripts' PARAMS
("plan", "bimSupplement"; a cad->ifc IFC model's "source" is pinned to the drawing version just built):
  ifc       the IFC model
  cad       the drawing
  cad->ifc  the drawing, then the IFC model that reads it
A model the project does not have yet is created from its skeleton with the plan in it (its v1). Each model gets at
most one version (none when its PARAMS already hold the delivery). It all happens under the project's lock, so no
edit of these models is staged meanwhile; a model with unsaved staged edits is refused before anything is built.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timezone

from django.db import transaction

from api.signatures import Signature
from core import cancellation
from core.errors import ApplicationError, Conflict, Invalid, NotFound
from core.provenance import DEFAULT_AUTHOR, Provenance
from models_app.models import IfcModel, Project
from models_app.project_services import ifc_skeleton_script, project_lock, project_model_create, project_model_init
from models_app.script_services import PROXY_ROUTES, forward
from models_app.selectors import model_metadata, project_get, project_model_of_format
from models_app.signals import project_event
from plans_app import validation
from plans_app.models import PLAN_FILES, PlanVersion
from plans_app.services import check_document, latest_version, write_version

logger = logging.getLogger(__name__)
ROUTES = {route.route: route for route in PROXY_ROUTES}
DESIGN_PSET = "ScriptLib_Design"


@dataclass
class Built:
    model_id: str
    format: str
    version: str
    counts: dict | None = None

    def reference(self) -> dict:
        return {"modelId": self.model_id, "version": self.version, "format": self.format}


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


def _known_design_keys(project: Project, plan: dict) -> set[str] | None:
    """Design keys a supplement may name: the IFC model's, the spaces the plan builds, the walls a cad->ifc model
    makes of the drawing; None (no check) for a cad project's drawing."""
    if project.kind == Project.Kind.CAD:
        return None
    spaces = {f"space:{r['id']}" for r in plan.get("rooms", [])}
    model = project_model_of_format(project, IfcModel.Format.IFC)
    keys = _design_keys(model.id) if model is not None else set()
    if project.kind == Project.Kind.CAD_TO_IFC:
        keys |= {f"wall:wall-{side}" for side in ("south", "east", "north", "west")}
    return keys | spaces


def _edit(model_id: str, route: str, method: str, body: dict | None = None, signature: Signature | None = None):
    return forward(model_id=model_id, route=ROUTES[route], method=method, body=body, signature=signature)


def _refuse_staged(model_id: str) -> None:
    if _edit(model_id, "script", "GET").get("source") == "staging":
        raise Conflict(f"the model {model_id} has unsaved staged edits: save or discard them before delivering")


def _build_model(model: IfcModel, updates: dict, signature: Signature, provenance: str) -> Built:
    """Writes the delivery into the model's PARAMS and saves one version; unchanged PARAMS reuse the latest version.
    A failed build is discarded (staging was empty before)."""
    params = _edit(model.id, "script/params", "GET")
    missing = [key for key in updates if key not in params]
    if missing:
        raise Invalid(f"the build script of {model.id} declares no PARAMS {' and '.join(missing)}; a delivery writes them")
    if all(params[key] == value for key, value in updates.items()):
        return Built(model.id, model.format, _edit(model.id, "edit/versions", "GET")["current"])
    cancellation.check()
    _edit(model.id, "script", "PUT", {"params": {**params, **updates}, "note": "deliver"})
    try:
        saved = _edit(model.id, "script/save", "POST", {"note": "deliver", "author": signature.author, "provenance": {"source": provenance}}, signature)
    except ApplicationError as exc:
        _discard_quietly(model.id)
        raise Invalid(f"the delivery could not build {model.id}: {exc.detail}", data=exc.data) from None
    cancellation.record(f"saved {model.format} model {model.id} {saved['version']}")
    return Built(model.id, model.format, saved["version"], saved.get("semanticDiff"))


def _create_model(project: Project, updates: dict, signature: Signature, provenance: str) -> Built:
    author = signature.author
    cancellation.check()
    if project.kind == Project.Kind.IFC:
        model, saved = project_model_create(project=project, name=f"{project.title}.ifc", script=ifc_skeleton_script(project.title, updates),
                                            note="deliver", author=author, provenance=provenance)
    else:  # a new IFC model of a cad->ifc project pins the drawing's latest version, the one just built
        model, saved = project_model_init(project=project, params={k: v for k, v in updates.items() if k != "source"}, author=author, provenance=provenance)
    return Built(model.id, model.format, saved["version"])


def _discard_quietly(model_id: str) -> None:
    try:
        _edit(model_id, "script/discard", "POST")
    except ApplicationError:
        logger.exception("discarding the failed delivery of %s failed", model_id)


def _build_project(project: Project, plan: dict, supplement: dict, signature: Signature, provenance: str) -> list[Built]:
    """The project's models built from the delivery, in build order."""
    formats = {Project.Kind.IFC: [IfcModel.Format.IFC], Project.Kind.CAD: [IfcModel.Format.DXF],
               Project.Kind.CAD_TO_IFC: [IfcModel.Format.DXF, IfcModel.Format.IFC]}[project.kind]
    existing = {model_format: project_model_of_format(project, model_format) for model_format in formats}
    for model in existing.values():
        if model is not None:
            _refuse_staged(model.id)
    built: list[Built] = []
    for model_format in formats:
        updates = {"plan": plan, "bimSupplement": supplement}
        if project.kind == Project.Kind.CAD_TO_IFC and model_format == IfcModel.Format.IFC:
            updates["source"] = {"model": built[0].model_id, "version": built[0].version}
        model = existing[model_format]
        try:
            built.append(_build_model(model, updates, signature, provenance) if model is not None else _create_model(project, updates, signature, provenance))
        except ApplicationError as exc:
            if built:  # versions are never taken back: say what was built before the failure
                exc.detail = f"{exc.detail} (already built: {', '.join(f'{b.model_id} {b.version}' for b in built)})"
            raise
    return built


def _requirement_status(requirement: dict, rooms: dict) -> dict:
    room = rooms.get(requirement.get("target", ""))
    if requirement["kind"] == "area" and room is not None and "value" in requirement and "area" in room:
        met = room["area"] >= requirement["value"]
        return {"id": requirement["id"], "status": "met" if met else "unmet", "evidence": f"area {room['area']} {'>=' if met else '<'} {requirement['value']}"}
    return {"id": requirement["id"], "status": "unchecked", "evidence": ""}


def building_document(plan: dict, supplement: dict, *, plan_version: str, built: list[Built]) -> dict:
    """The delivered building; `model` is the main product (the IFC model, or a cad project's drawing), `models`
    every model the delivery built, in build order."""
    rooms = {room["id"]: room for room in plan.get("rooms", [])}
    main = built[-1] if built else None
    return {
        "schema": "building/1",
        "deliveredAt": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "planVersion": plan_version,
        "model": main.reference() if main else None,
        "models": [{**b.reference(), "changes": b.counts} for b in built],
        "storeys": [
            {"id": s["id"], "name": s["name"], "elevation": s["elevation"],
             "rooms": [{"id": r["id"], "name": r["name"], "area": r.get("area"), "designKey": f"space:{r['id']}"} for r in rooms.values() if r["storey"] == s["id"]]}
            for s in plan.get("storeys", [])
        ],
        "elementTypes": {cls: {k: v for k, v in values.items() if k != "psets"} for cls, values in supplement.get("elementTypes", {}).items()},
        "requirements": [_requirement_status(r, rooms) for r in plan.get("requirements", [])],
        "modelChanges": main.counts if main else None,
        "warnings": [f"room {r['id']} has no outline: it is not built" for r in rooms.values() if not r.get("outline")],
    }


def deliver(*, project_id: str, plan: dict, bim_supplement: dict, author: str = DEFAULT_AUTHOR, provenance: str = Provenance.UI.value,
            signature: Signature | None = None) -> dict:
    """Validates plan and supplement, builds the project's models from them (see the module docstring), records the
    delivered building: plan, supplement and building in one plan version. A validation error writes nothing.

    :param project_id: the project (p_ + 16 hex) whose models are built
    :param plan: the plan document (schema "plan/1": storeys, rooms, requirements)
    :param bim_supplement: the BIM supplement (schema "bim_supplement/1": element types, design-key properties)
    :param author: the author of every version the delivery saves
    :param signature: signs them instead of `author` (the caller's account, api.signatures)
    :param provenance: UI or AI, recorded the same way
    :return: {"version": "v<n>" (the plan version), "building": the delivered building document, "model": the main
        model {modelId, version, format}}

    Example:

    .. code:: python

        project = project_create(title="House", kind="ifc")
        result = deliver(project_id=project.id, plan=plan, bim_supplement=supplement, author="alice")
        result["model"]  # {"modelId": "m_...", "version": "v1", "format": "ifc"}: created from the skeleton
        deliver(project_id=project.id, plan=plan, bim_supplement=supplement)["model"]["version"]  # "v1" again: nothing changed
    """
    signature = signature or Signature(author or DEFAULT_AUTHOR)
    project = project_get(project_id)
    check_document("plan", plan)
    check_document("bim_supplement", bim_supplement)
    errors = validation.cross_reference_errors(plan, bim_supplement, _known_design_keys(project, plan))
    if errors:
        raise Invalid(f"{errors[0]['file']} {errors[0]['path']}: {errors[0]['message']}", data={"errors": errors})
    with project_lock(project.id, exclusive=True):
        built = _build_project(project, plan, bim_supplement, signature, provenance)
        with cancellation.commit("recorded the delivery"), transaction.atomic():
            locked = Project.objects.select_for_update().get(pk=project.pk)
            latest = latest_version(locked)
            label = f"v{latest.number + 1 if latest else 1}"
            building = building_document(plan, bim_supplement, plan_version=label, built=built)
            write_version(locked, {"plan": plan, "bim_supplement": bim_supplement, "building": building},
                           changed=list(PLAN_FILES), author=signature.author, provenance=provenance, operation=PlanVersion.Operation.DELIVER, note="deliver")
    for model in built:
        project_event.send(sender=None, project_id=project.id, event="viewer.committed", data={"modelId": model.model_id, "kind": model.format, "version": model.version})
    return {"version": label, "building": building, "model": building["model"]}
