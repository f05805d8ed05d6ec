"""Checks of the plan files: each against its JSON Schema (shipped in schemas/), and, before a delivery, the
cross-references a schema cannot express. Errors name the file and the JSON path."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import jsonschema

SCHEMAS_DIR = Path(__file__).resolve().parent / "schemas"


@lru_cache(maxsize=None)
def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def json_path(parts) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def schema_errors(name: str, document) -> list[dict]:
    errors = sorted(validator(name).iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    return [{"file": name, "path": json_path(e.absolute_path), "message": e.message} for e in errors[:50]]


def _duplicates(items: list[dict]) -> set[str]:
    seen, twice = set(), set()
    for item in items:
        (twice if item["id"] in seen else seen).add(item["id"])
    return twice


def cross_reference_errors(plan: dict, supplement: dict, design_keys: set[str] | None) -> list[dict]:
    """Unique ids, rooms on existing storeys, requirement targets that exist, supplement elements that exist in
    the model (when its design keys are known)."""
    errors = []
    for collection in ("storeys", "rooms", "requirements"):
        for duplicate in sorted(_duplicates(plan.get(collection, []))):
            errors.append({"file": "plan", "path": f"$.{collection}[{duplicate}]", "message": f"id {duplicate!r} is used twice"})
    storeys = {s["id"] for s in plan.get("storeys", [])}
    for room in plan.get("rooms", []):
        if room["storey"] not in storeys:
            errors.append({"file": "plan", "path": f"$.rooms[{room['id']}].storey", "message": f"no storey {room['storey']!r} in the plan"})
    targets = storeys | {r["id"] for r in plan.get("rooms", [])}
    for requirement in plan.get("requirements", []):
        if requirement.get("target") and requirement["target"] not in targets:
            errors.append({"file": "plan", "path": f"$.requirements[{requirement['id']}].target", "message": f"no storey or room {requirement['target']!r}"})
    if design_keys is not None:
        for key in supplement.get("elements", {}):
            if key not in design_keys:
                errors.append({"file": "bim_supplement", "path": f"$.elements.{key}", "message": f"the model has no element with design key {key!r}"})
    return errors
