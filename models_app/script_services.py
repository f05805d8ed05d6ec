"""Use cases of the gateway's script editing: forwarding a call to the edit service, then what must follow its
success (reconversion when the working product changed, the `version_saved` announcement after a save)."""

from __future__ import annotations

import logging
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable

from api.signatures import Signature
from core.errors import ApplicationError, Invalid, NotFound
from core.provenance import DEFAULT_AUTHOR, Provenance, provenance_error
from models_app import edit_client, revision_services
from models_app.access_scopes import ModelScope
from models_app.edit_client import UpstreamOutcomeUnknown
from models_app.project_services import project_lock_of_model
from models_app.selectors import model_exists
from models_app.services import request_conversion
from models_app.signals import version_saved

logger = logging.getLogger(__name__)

# (model id, edit-service answer, validated request body, who signs the call) -> the answer to give
SuccessHook = Callable[[str, dict, dict, Signature], dict]


def check_provenance(body) -> None:
    """provenance.source outside UI/AI is rejected before anything is forwarded."""
    if not isinstance(body, dict) or "provenance" not in body or body["provenance"] is None:
        return
    provenance = body["provenance"]
    if not isinstance(provenance, dict) or provenance.get("source") not in Provenance.values:
        raise Invalid(provenance_error(provenance))


def queue_reconversion(model_id: str, payload: dict, body: dict, signature: Signature) -> dict:
    request_conversion(model_id)  # the working product changed: the viewer gets a new XKT
    return payload


def announce_saved_version(model_id: str, payload: dict, body: dict, signature: Signature) -> dict:
    """Tells the record-keeping apps (change log) about the saved version; a failure there is a warning, never an
    error of the (already successful) save."""
    try:
        version_saved.send(
            sender=None,
            model_id=model_id,
            version=payload.get("version", ""),
            changed=(payload.get("diff") or {}).get("changed", []),
            author=signature.author,
            author_verified=signature.verified,
            provenance=(body.get("provenance") or {}).get("source") or Provenance.UI.value,
            operation=body.get("operation") or "update",
        )
    except Exception as exc:  # noqa: BLE001 - any failure of a receiver must leave the save's 200
        logger.exception("receivers of the save of %s failed", model_id)
        return {**payload, "warning": f"the version was saved but the change log could not be written: {exc}"}
    return payload


@dataclass(frozen=True)
class ProxyRoute:
    """One row of the spec's proxy table: gateway route under /api/v1/models/<id>/ -> edit-service path."""

    route: str
    edit_path: str
    methods: tuple[str, ...]
    on_success: tuple[SuccessHook, ...] = ()
    # (model id, body) -> the answer, for a model whose versions are its uploaded revisions (revision_services)
    for_revisions: Callable[[str, dict | None], dict] | None = None
    records_author: bool = False  # the edit service keeps the body's author (a saved version's)

    @property
    def changes_product(self) -> bool:
        return queue_reconversion in self.on_success


PROXY_ROUTES = [
    ProxyRoute("script", "/script", ("get", "put")),
    ProxyRoute("script/params", "/script/params", ("get",)),
    ProxyRoute("script/undo", "/script/undo", ("post",)),
    ProxyRoute("script/redo", "/script/redo", ("post",)),
    # discard brings model.ifc back to the last saved version, so it is converted again too
    ProxyRoute("script/discard", "/script/discard", ("post",), (queue_reconversion,)),
    ProxyRoute("script/run", "/script/run", ("post",), (queue_reconversion,)),
    ProxyRoute("script/save", "/script/save", ("post",), (queue_reconversion, announce_saved_version), records_author=True),
    ProxyRoute("script/rollback", "/script/rollback", ("post",), (queue_reconversion,)),
    ProxyRoute("script/diff", "/script/diff", ("post",)),
    ProxyRoute("script/staging/diff", "/script/staging/diff", ("get",)),
    ProxyRoute("script/locate", "/script/locate", ("get",)),
    ProxyRoute("scripts", "/scripts", ("get",)),
    ProxyRoute("edit/pending", "/pending", ("get", "delete")),
    ProxyRoute("edit/history", "/history", ("get",)),
    ProxyRoute("edit/versions", "/versions", ("get",), for_revisions=revision_services.revision_versions),
    ProxyRoute("edit/diff", "/diff", ("post",), for_revisions=revision_services.revision_diff),
]


def require_model(model_id: str, scope: ModelScope | None = None) -> None:
    """A model outside the trash, or 40400. `scope`: the model's scope already looked up for this request (the
    access decision's `request.access_scope`), which says so without a second query."""
    if not isinstance(scope, ModelScope) or scope.model_id != model_id:
        exists = model_exists(model_id)
    else:
        exists = scope.exists and not scope.in_trash
    if not exists:
        raise NotFound(f"model {model_id} not found")


def forward(*, model_id: str, route: ProxyRoute, method: str, query=None, body=None, signature: Signature | None = None,
            scope: ModelScope | None = None):
    """Forwards one script/edit call for an existing model and applies the route's follow-ups on success; the
    versions and diff of a model with uploaded revisions are answered from those instead. `signature` (the
    caller's account, api.signatures) replaces the body's self-declared author of a call that records one; `scope`
    is the model's scope if the request already looked it up (require_model). When the outcome is unknown (the
    edit service was too slow or the connection broke) a product-changing call is assumed to have changed the
    product: converting once more is harmless, a stale viewer is not."""
    require_model(model_id, scope)
    check_provenance(body)
    if signature is not None and signature.verified:
        if route.records_author and isinstance(body, dict):
            body = {**body, "author": signature.author}
    else:  # the operator's token, the open mode: the body's self-declared author, as the spec has it
        declared = body.get("author") if isinstance(body, dict) else None
        signature = Signature(declared.strip() if isinstance(declared, str) and declared.strip() else DEFAULT_AUTHOR)
    if route.for_revisions is not None and revision_services.uses_revisions(model_id):
        return route.for_revisions(model_id, body)
    try:
        with nullcontext() if method.upper() == "GET" else project_lock_of_model(model_id):
            payload = edit_client.call(method, f"/models/{model_id}{route.edit_path}", params=query, json=body)
    except UpstreamOutcomeUnknown:
        if route.changes_product:
            request_conversion(model_id)
        raise
    for hook in route.on_success:
        payload = hook(model_id, payload, body if isinstance(body, dict) else {}, signature)
    return payload


def script_edit_call(*, model_id: str, design_key: str, argument: str, value) -> dict:
    """edit-call is not proxied (spec): gateway code that uses it (agent, overrides migrate) goes through here, so
    the changed product is converted like after a run."""
    require_model(model_id)
    with project_lock_of_model(model_id):
        payload = edit_client.call(
            "POST", f"/models/{model_id}/script/edit-call", json={"designKey": design_key, "argument": argument, "value": value}
        )
    request_conversion(model_id)
    return payload


def script_cancel_runs(*, model_id: str) -> dict:
    """Kills the model's sandbox runs on the edit service (an aborted chat turn); nothing they made is published."""
    try:
        return edit_client.call("POST", f"/models/{model_id}/script/cancel")
    except ApplicationError as exc:
        logger.warning("cancelling the sandbox runs of %s failed: %s", model_id, exc.detail)
        return {"cancelled": 0}
