"""drf-spectacular post-processing: documents every JSON response inside the gateway envelope, and the error
statuses every operation can answer whatever its view declares: the edge's (400 size or parameters, 401 token,
403 cross-site), 404 for routes with ids, 409 and 502 where the use cases behind them can conflict or call the
edit service, 500."""

import re

ENVELOPE_PATH_PREFIX = "/api/v1/"
SKIP = {"/api/v1/openapi.json", "/api/v1/docs"}
UNSAFE_METHODS = {"post", "put", "patch", "delete"}
# Areas whose use cases call the edit service or hold a model/project lock (models, projects, chat).
UPSTREAM_PATH = re.compile(r"^/api/v1/(models/\{[^}]+\}/|projects/|chat/)")

STANDARD_ERRORS = {
    "400": "40001: invalid parameters or body; 40002: over a size limit",
    "401": "40100: missing or invalid bearer token (when apiToken is set)",
    "403": "40300: cross-site request refused (Origin/Referer neither this gateway nor in corsOrigins)",
    "404": "40400: not found",
    "409": "40900: conflict",
    "500": "50000: internal server error",
    "502": "50200: the edit service is unreachable or failed",
}


def _enveloped(schema: dict | None) -> dict:
    return {
        "type": "object",
        "required": ["code", "message", "data"],
        "properties": {
            "code": {"type": "integer", "description": "0 on success, else an error code (40001, 40002, 40100, 40300, 40400, 40900, 50000, 50200)"},
            "message": {"type": "string", "description": "'ok' on success, else the error text"},
            "data": schema or {"nullable": True, "description": "null, or details of the error"},
        },
    }


def _error_statuses(path: str, method: str) -> list[str]:
    statuses = ["400", "401", "500"]
    if method in UNSAFE_METHODS:
        statuses.append("403")
    if "{" in path:
        statuses.append("404")
    if UPSTREAM_PATH.match(path):
        statuses += ["409", "502"] if method in UNSAFE_METHODS else ["502"]
    return statuses


def _is_envelope(schema: dict) -> bool:
    return schema.get("$ref", "").endswith("/ErrorEnvelope") or {"code", "message", "data"} <= set(schema.get("properties", {}))


def _wrap(response: dict) -> None:
    content = response.setdefault("content", {})
    if not content:
        content["application/json"] = {"schema": _enveloped(None)}
    elif "application/json" in content and not _is_envelope(content["application/json"].get("schema") or {}):
        content["application/json"]["schema"] = _enveloped(content["application/json"].get("schema"))


def wrap_responses_in_envelope(result, generator, request, public):
    """API answers are all in the envelope; static files (/v1/...) are not, but their errors are."""
    for path, operations in result.get("paths", {}).items():
        if path in SKIP:
            continue
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            if path.startswith(ENVELOPE_PATH_PREFIX):
                for response in responses.values():
                    _wrap(response)
            for status in _error_statuses(path, method):
                if status not in responses:
                    responses[status] = {"description": STANDARD_ERRORS[status]}
                    _wrap(responses[status])
    return result
