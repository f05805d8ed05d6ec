"""drf-spectacular post-processing of the edit service's document: the error statuses every operation can answer,
whatever its view declares, each with the {detail} body: 400 (a Host header or body the server refuses), 404 (unknown
model or version), 409 (staging diverged from the map, nothing to undo, the model's lock not free in time), 422
(missing or invalid parameters, a failed contract check or sandbox build), 500, and 503 (sandbox isolation
unavailable: runs are refused)."""

ERRORS = {
    "400": "refused Host header or request body",
    "404": "model or version not found",
    "409": "conflict: staging diverged from the script map, nothing to undo/redo, or the model's lock was not free in time",
    "422": "missing or invalid parameters, invalid file, failed contract check or sandbox build (last 2 KB of its output)",
    "500": "internal error",
    "503": "isolation unavailable: script execution refused",
}
DETAIL = {"type": "object", "properties": {"detail": {}}, "required": ["detail"]}


def document_error_statuses(result, generator, request, public):
    for path, operations in result.get("paths", {}).items():
        if not path.startswith("/models/"):
            continue
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for status, description in ERRORS.items():
                responses.setdefault(status, {"description": description, "content": {"application/json": {"schema": DETAIL}}})
    return result
