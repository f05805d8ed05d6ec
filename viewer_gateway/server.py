"""Serves the gateway (serving/http_server.py), refusing request bodies over each route's limit before they are read."""

from __future__ import annotations

import json

from django.conf import settings

from api.envelope import HTTP_STATUS, TOO_LARGE, envelope
from core.limits import (
    BCF_ARCHIVE_MAX_BYTES,
    DEFAULT_BODY_BYTES,
    IDS_MAX_BYTES,
    MEGABYTE,
    MULTIPART_OVERHEAD_BYTES,
    PLAN_FILE_BYTES,
    SCREENSHOT_MAX_BYTES,
    SCRIPT_BODY_BYTES,
    size_limit_message,
)
from serving.http_server import RequestHead, raw_response, serve
from viewer_gateway.edge import ForwardedView, edge_refusal, route_name

# (method, URL name) -> the largest body accepted; decided on the route Django will resolve, like the edge checks
_ROUTE_LIMITS = {
    ("POST", "model-list"): lambda: settings.VIEWER.max_upload_bytes + MULTIPART_OVERHEAD_BYTES,
    ("POST", "model-revisions"): lambda: settings.VIEWER.max_upload_bytes + MULTIPART_OVERHEAD_BYTES,
    ("POST", "issue-list"): lambda: SCREENSHOT_MAX_BYTES + MULTIPART_OVERHEAD_BYTES,
    ("POST", "issues-bcf-import"): lambda: BCF_ARCHIVE_MAX_BYTES + MULTIPART_OVERHEAD_BYTES,
    ("PUT", "plan-file"): lambda: PLAN_FILE_BYTES,
    ("PUT", "ids-file"): lambda: IDS_MAX_BYTES,
    ("POST", "check-list"): lambda: IDS_MAX_BYTES + MULTIPART_OVERHEAD_BYTES,
    ("PUT", "edit-proxy-script"): lambda: SCRIPT_BODY_BYTES,
    **{(method, route): lambda: 256 * 1024 for method, route in (("POST", "bcf-topics"), ("PUT", "bcf-topic"), ("POST", "bcf-comments"), ("PUT", "bcf-comment"))},
    ("POST", "bcf-documents"): lambda: 50 * MEGABYTE + MULTIPART_OVERHEAD_BYTES,  # bcfapi_app.documents.DOCUMENT_MAX_BYTES
}


def body_limit(method: str, path: str) -> int:
    route = route_name(path)
    limit = _ROUTE_LIMITS.get((method, route)) if route else None
    return limit() if limit else DEFAULT_BODY_BYTES


_REASONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 429: "Too Many Requests"}


def _envelope_response(code: int, message: str, request_headers: dict[str, str], extra_headers: dict[str, str] | None = None) -> bytes:
    status = HTTP_STATUS[code]
    headers = {"Content-Type": "application/json", **(extra_headers or {})}
    origin = request_headers.get("origin", "")
    if origin.rstrip("/") in settings.VIEWER.corsOrigins:
        headers.update({"Access-Control-Allow-Origin": origin, "Vary": "Origin"})
    return raw_response(f"{status} {_REASONS[status]}", headers, json.dumps(envelope(None, code, message)).encode())


def refusal(limit: int, request_headers: dict[str, str], what: str = "request body") -> bytes:
    return _envelope_response(TOO_LARGE, size_limit_message(limit, what), request_headers)


def header_check(head: RequestHead) -> bytes | None:
    """The edge checks of viewer_gateway/edge.py on the request line and headers, before any body byte is read."""
    view = ForwardedView.of(head.peer_host, head.scheme, head.headers)
    refused = edge_refusal(head.method, head.path, view.scheme, head.headers.get("host", ""), head.headers, view.client_host)
    return None if refused is None else _envelope_response(refused.code, refused.message, head.headers, refused.headers)


def run(host: str, port: int) -> None:
    serve(
        "viewer_gateway.asgi:application",
        host=host,
        port=port,
        body_limit=body_limit,
        refusal=refusal,
        header_check=header_check,
    )
