"""drf-spectacular post-processing of the edit service's document: the service secret every /models/ operation
needs (edit_service/door.py), and the error statuses every such operation can answer, whatever its view declares,
each with the {detail} body: 400 (a Host header or body the server refuses), 401 (no or a wrong service secret), 403
(a request made by a web browser), 404 (unknown model or version), 409 (staging diverged from the map, nothing to
undo, the model's lock not free in time), 415 (a body that is not the route's format), 422 (missing or invalid
parameters, a failed contract check or sandbox build), 500, and 503 (sandbox isolation unavailable: runs are
refused)."""

from core.service_secret import HEADER as SECRET_HEADER

SECURITY_SCHEME = "serviceSecret"
ERRORS = {
    "400": "refused Host header or request body",
    "401": f"missing or wrong {SECRET_HEADER} header (the data directory's service-secret file)",
    "403": "request made by a web browser (Origin or Sec-Fetch-* header): browsers use the gateway",
    "404": "model or version not found",
    "409": "conflict: staging diverged from the script map, nothing to undo/redo, or the model's lock was not free in time",
    "415": "a body that is not the route's format (JSON; multipart on diff/upload)",
    "422": "missing or invalid parameters, invalid file, failed contract check or sandbox build (last 2 KB of its output)",
    "500": "internal error",
    "503": "isolation unavailable: script execution refused",
}
DETAIL = {"type": "object", "properties": {"detail": {}}, "required": ["detail"]}


def document_error_statuses(result, generator, request, public):
    result.setdefault("components", {}).setdefault("securitySchemes", {})[SECURITY_SCHEME] = {
        "type": "apiKey", "in": "header", "name": SECRET_HEADER,
        "description": "the contents of {dataDir}/service-secret (created on first start, readable by the service's user only)",
    }
    for path, operations in result.get("paths", {}).items():
        if not path.startswith("/models/"):
            continue
        for operation in operations.values():
            operation["security"] = [{SECURITY_SCHEME: []}]
            responses = operation.setdefault("responses", {})
            for status, description in ERRORS.items():
                responses.setdefault(status, {"description": description, "content": {"application/json": {"schema": DETAIL}}})
    return result
