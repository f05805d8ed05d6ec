"""Serves the gateway with Daphne, refusing request bodies over each route's limit before they are buffered."""

from __future__ import annotations

import json
import re

from django.conf import settings

from serving.daphne import raw_response, serve
from viewer_gateway.envelope import TOO_LARGE, envelope
from viewer_gateway.uploads import BCF_ARCHIVE_MAX_BYTES, MEGABYTE, MULTIPART_OVERHEAD_BYTES, size_limit_message

SCREENSHOT_PART_BYTES = 5 * MEGABYTE  # spec, Limits: issue screenshot
PLAN_FILE_BYTES = 5 * MEGABYTE
# JSON bodies (scripts, plans, messages) and everything not listed below
DEFAULT_BODY_BYTES = 10 * MEGABYTE

_ROUTE_LIMITS = [
    ("POST", re.compile(r"^/api/v1/models$"), lambda: settings.VIEWER.max_upload_bytes + MULTIPART_OVERHEAD_BYTES),
    ("POST", re.compile(r"^/api/v1/models/[^/]+/issues$"), lambda: SCREENSHOT_PART_BYTES + MULTIPART_OVERHEAD_BYTES),
    ("POST", re.compile(r"^/api/v1/models/[^/]+/issues/bcf$"), lambda: BCF_ARCHIVE_MAX_BYTES + MULTIPART_OVERHEAD_BYTES),
    ("PUT", re.compile(r"^/api/v1/projects/[^/]+/(plan|bim_supplement|building)$"), lambda: PLAN_FILE_BYTES),
]


def body_limit(method: str, path: str) -> int:
    for route_method, pattern, limit in _ROUTE_LIMITS:
        if method == route_method and pattern.match(path):
            return limit()
    return DEFAULT_BODY_BYTES


def refusal(limit: int, request_headers: dict[str, str]) -> bytes:
    headers = {"Content-Type": "application/json"}
    origin = request_headers.get("origin", "")
    if origin.rstrip("/") in settings.VIEWER.corsOrigins:
        headers.update({"Access-Control-Allow-Origin": origin, "Vary": "Origin"})
    body = envelope(None, TOO_LARGE, size_limit_message(limit, "request body"))
    return raw_response("400 Bad Request", headers, json.dumps(body).encode())


def run(host: str, port: int) -> None:
    serve(
        ["-b", host, "-p", str(port), "--proxy-headers", "viewer_gateway.asgi:application"],
        body_limit=body_limit,
        refusal=refusal,
    )
