"""Use cases of the gateway's script editing: forwarding to the edit service, then what must follow a success
(reconversion after run/save/rollback/discard, the change log after a save)."""

from __future__ import annotations

import logging

from issues_app.services import record_version_changes
from models_app import edit_client
from models_app.services import request_conversion
from models_app.storage import MODEL_ID_RE, model_dir
from viewer_gateway.envelope import InvalidInput, NotFound

logger = logging.getLogger(__name__)

PROVENANCE_SOURCES = ("UI", "AI")


def check_provenance(body) -> None:
    """provenance.source outside UI/AI is rejected before anything is forwarded."""
    if not isinstance(body, dict) or "provenance" not in body:
        return
    provenance = body["provenance"]
    source = provenance.get("source") if isinstance(provenance, dict) else None
    if source not in PROVENANCE_SOURCES:
        raise InvalidInput(f"provenance.source must be UI or AI, got {source!r}")


def forward(*, model_id: str, method: str, edit_path: str, query=None, body=None, after: str | None = None):
    """Forwards one script/edit call for an existing model and applies its follow-up on success."""
    # The model's folder exists exactly as long as the model (created at upload, removed by delete); checking it
    # instead of the database keeps a database connection off the proxy's hot path.
    if not MODEL_ID_RE.match(model_id or "") or not model_dir(model_id).is_dir():
        raise NotFound(f"model {model_id} not found")
    check_provenance(body)
    payload = edit_client.call(method, f"/models/{model_id}{edit_path}", params=query, json=body)
    if after in ("reconvert", "save"):
        request_conversion(model_id)  # the working product changed: the viewer gets a new XKT
    if after == "save":
        payload = _log_saved_changes(model_id, payload, body if isinstance(body, dict) else {})
    return payload


def _log_saved_changes(model_id: str, payload: dict, body: dict) -> dict:
    """One change entry per changed field of the saved version's semantic diff; a failure here is reported as a
    warning, never as an error of the (already successful) save."""
    try:
        diff = payload.get("diff") or {}
        record_version_changes(
            model_id=model_id,
            version=payload.get("version", ""),
            changed=diff.get("changed", []),
            author=body.get("author") or "local-user",
            provenance=(body.get("provenance") or {}).get("source", "UI"),
            operation=body.get("operation") or "update",
        )
    except Exception as exc:  # noqa: BLE001 - any failure of the log must leave the save's 200
        logger.exception("change log for the save of %s not written", model_id)
        return {**payload, "warning": f"the version was saved but the change log could not be written: {exc}"}
    return payload
