"""Use case: turn a model's property overrides into edits of its build script (one edit-call per override, one
save)."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from api.signatures import Signature
from core.errors import ApplicationError, Conflict, Invalid, Upstream
from core.provenance import DEFAULT_AUTHOR, Provenance
from issues_app.models import ChangeEntry, Override, OverrideMigration
from issues_app.selectors import element_ifc_value
from models_app.models import IfcModel
from models_app.public import edit_service_call
from models_app.selectors import model_get
from models_app.services import request_conversion

logger = logging.getLogger(__name__)

MIGRATION_STALE_AFTER = timedelta(minutes=15)


def migrate_overrides(*, model_id: str, author: str = DEFAULT_AUTHOR, provenance: str = Provenance.UI.value,
                      signature: Signature | None = None) -> dict:
    """Replays every override as a real script edit (edit-call), then one save with operation migrate. One
    migration per model at a time; refused while the model has staged edits of its own (the save would commit
    them). Migrated fields lose their override (unless it changed meanwhile) and get a change entry (operation
    migrate); failed fields keep it, with a reason. An unreachable edit service fails the whole migration (50200).

    :param model_id: the model whose overrides are migrated (m_ + 16 hex)
    :param author: the author of the saved version and of the change entries
    :param signature: signs them instead of `author` (the caller's account, api.signatures)
    :param provenance: UI or AI, recorded the same way
    :return: {"migrated": [{entityId, field, value}], "failed": [{entityId, field, value, reason}], "version": "v<n>"
        or None when nothing was saved}

    Example:

    .. code:: python

        entity_properties_update(model_id="m_0123456789abcdef", entity_id="2O2Fr$t4X7Zf8NOew3FLOH",
                                 entity_name="Wall 1", fields={"Name": "South wall"})
        result = migrate_overrides(model_id="m_0123456789abcdef", author="alice")
        result["migrated"]  # [{"entityId": "2O2Fr$t4X7Zf8NOew3FLOH", "field": "Name", "value": "South wall"}]
        result["version"]  # "v3": the script now writes Name="South wall"; the override is gone
    """
    model = model_get(model_id)
    _claim_migration(model)
    try:
        if edit_service_call("GET", f"/models/{model.id}/script").get("source") == "staging":
            raise Conflict("the model has staged edits: save or discard them before migrating overrides")
        return _migrate(model, signature or Signature(author or DEFAULT_AUTHOR), provenance)
    finally:
        OverrideMigration.objects.filter(model=model).delete()


def _migrate(model: IfcModel, signature: Signature, provenance: str) -> dict:
    migrated, failed = [], []
    for override in list(model.overrides.order_by("entity_id", "field")):
        item = {"entityId": override.entity_id, "field": override.field, "value": override.value}
        try:
            _migrate_one(model.id, override)
            migrated.append((override, item))
        except Upstream:
            if migrated:
                _discard_staging(model.id)
            raise
        except ApplicationError as exc:
            failed.append({**item, "reason": str(exc.detail)})
    if not migrated:
        return {"migrated": [], "failed": failed, "version": None}
    try:
        saved = edit_service_call(
            "POST", f"/models/{model.id}/script/save",
            json={"note": "migrate overrides", "operation": "migrate", "author": signature.author, "provenance": {"source": provenance}},
        )
    except ApplicationError as exc:
        _discard_staging(model.id)
        if isinstance(exc, Upstream):
            raise
        reason = f"the migrated script could not be saved: {exc.detail}"
        return {"migrated": [], "failed": failed + [{**item, "reason": reason} for _, item in migrated], "version": None}
    request_conversion(model.id)
    field_changes = {(c["guid"], change["field"]): change for c in (saved.get("diff") or {}).get("changed", []) for change in c["changes"]}
    with transaction.atomic():
        for override, item in migrated:
            ChangeEntry.objects.create(
                model=model, entity_id=override.entity_id, entity_name=override.entity_name, field=override.field,
                old_value=element_ifc_value(model.id, override.entity_id, override.field), new_value=override.value,
                author=signature.author, author_verified=signature.verified, provenance=provenance, operation=ChangeEntry.Operation.MIGRATE,
                diff={"version": saved["version"], **field_changes.get((override.entity_id, override.field), {"field": override.field})},
            )
            if not Override.objects.filter(pk=override.pk, value=override.value).delete()[0]:
                item["overrideKept"] = "the override changed during the migration and keeps its new value"
    return {"migrated": [item for _, item in migrated], "failed": failed, "version": saved["version"]}


def _migrate_one(model_id: str, override: Override) -> None:
    """One override -> one edit-call on the element's call site; raises ApplicationError with the reason on failure."""
    located = edit_service_call("GET", f"/models/{model_id}/script/locate", params={"guid": override.entity_id})
    if located.get("stale"):
        raise Invalid("the staged script has changes that were not run; run or discard them first")
    if not located.get("found"):
        raise Invalid("the element is not created by the build script (no call site in the script map)")
    edit_service_call(
        "POST", f"/models/{model_id}/script/edit-call",
        json={"designKey": located["designKey"], "argument": override.field, "value": override.value},
    )


def _discard_staging(model_id: str) -> None:
    """Takes the migration's staged edit-calls back (staging was empty before it started)."""
    try:
        edit_service_call("POST", f"/models/{model_id}/script/discard")
    except ApplicationError:
        logger.exception("discarding the failed migration of %s failed", model_id)


def _claim_migration(model: IfcModel) -> None:
    OverrideMigration.objects.filter(model=model, started_at__lt=timezone.now() - MIGRATION_STALE_AFTER).delete()
    try:
        with transaction.atomic():
            OverrideMigration.objects.create(model=model)
    except IntegrityError:
        raise Conflict(f"a migration of model {model.id} is already running") from None
