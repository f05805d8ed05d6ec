"""Use cases of the property overrides and the change log: set or clear an element's overrides, record the change
entries of a saved version. Turning the overrides into script edits is issues_app.use_cases.migrate_overrides."""

from __future__ import annotations

import json

from django.db import transaction

from api.signatures import Signature
from core.errors import Invalid
from core.provenance import DEFAULT_AUTHOR, Provenance
from issues_app.models import OVERRIDE_FIELDS, ChangeEntry, Override
from issues_app.selectors import element_ifc_value
from models_app.models import IfcModel
from models_app.selectors import model_get


def _entity_overrides(model: IfcModel, entity_id: str) -> dict[str, str]:
    return dict(model.overrides.filter(entity_id=entity_id).values_list("field", "value"))


def entity_properties_update(
    *,
    model_id: str,
    entity_id: str,
    entity_name: str,
    fields: dict[str, str],
    author: str = DEFAULT_AUTHOR,
    provenance: str = Provenance.UI.value,
    signature: Signature | None = None,
) -> dict[str, str]:
    """Sets (or, with "", clears) whitelisted overrides of one element; one change entry per changed field, whose
    new value is the value that is effective afterwards (the IFC's when cleared), signed by `signature` (else
    `author`). Returns the element's effective overrides. One transaction, serialised per model."""
    signature = signature or Signature(author or DEFAULT_AUTHOR)
    model_get(model_id)
    if not entity_id or len(entity_id) > 64:
        raise Invalid(f"invalid entity id {entity_id!r}: 1 to 64 characters")
    unknown = sorted(set(fields) - set(OVERRIDE_FIELDS))
    if unknown:
        raise Invalid(f"field(s) outside the whitelist: {', '.join(unknown)} (allowed: {', '.join(OVERRIDE_FIELDS)})")
    with transaction.atomic():
        model = IfcModel.objects.select_for_update().get(pk=model_id)  # concurrent writers queue here
        current = _entity_overrides(model, entity_id)
        for field, value in fields.items():
            ifc_value = element_ifc_value(model.id, entity_id, field)
            effective = current.get(field, ifc_value)
            if value == "":
                if field not in current:
                    continue
                model.overrides.filter(entity_id=entity_id, field=field).delete()
                del current[field]
                new_effective = ifc_value
            elif value == effective:
                continue
            else:
                Override.objects.update_or_create(
                    model=model, entity_id=entity_id, field=field,
                    defaults={"value": value, "entity_name": entity_name},
                )
                current[field] = new_effective = value
            ChangeEntry.objects.create(
                model=model, entity_id=entity_id, entity_name=entity_name, field=field,
                old_value=effective, new_value=new_effective, author=signature.author, author_verified=signature.verified, provenance=provenance,
                operation=ChangeEntry.Operation.UPDATE,
            )
    return current


def _as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):  # a geometry change's placement or shape facts
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def record_version_changes(*, model_id: str, version: str, changed: list[dict], author: str, provenance: str, operation: str,
                           author_verified: bool = False) -> list[ChangeEntry]:
    """Change entries for a saved version: one per changed field of its semantic diff ({guid, changes: [{field, old,
    new}]}), with the diff item kept in `diff`."""
    model = model_get(model_id)
    entries = []
    with transaction.atomic():
        IfcModel.objects.select_for_update().filter(pk=model.pk).first()
        if model.changes.filter(diff__version=version).exists():
            return []  # a replayed save: its entries are written
        for item in changed:
            name_change = next((c for c in item["changes"] if c["field"] == "Name"), None)
            entity_name = _as_text(name_change["new"]) if name_change else element_ifc_value(model.id, item["guid"], "Name")
            for change in item["changes"]:
                entries.append(ChangeEntry.objects.create(
                    model=model, entity_id=item["guid"], entity_name=entity_name, field=change["field"],
                    old_value=_as_text(change["old"]), new_value=_as_text(change["new"]), author=author, author_verified=author_verified,
                    provenance=provenance, operation=operation, diff={"version": version, **change},
                ))
    return entries
