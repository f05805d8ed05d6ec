"""drf-spectacular post-processing: documents every JSON response inside the gateway envelope."""

ENVELOPE_PATH_PREFIX = "/api/v1/"
SKIP = {"/api/v1/openapi.json", "/api/v1/docs"}


def _enveloped(schema: dict | None) -> dict:
    return {
        "type": "object",
        "required": ["code", "message", "data"],
        "properties": {
            "code": {"type": "integer", "description": "0 on success, else an error code (40001, 40002, 40100, 40400, 40900, 50000, 50200)"},
            "message": {"type": "string", "description": "'ok' on success, else the error text"},
            "data": schema or {"nullable": True, "description": "null"},
        },
    }


def wrap_responses_in_envelope(result, generator, request, public):
    for path, operations in result.get("paths", {}).items():
        if not path.startswith(ENVELOPE_PATH_PREFIX) or path in SKIP:
            continue
        for operation in operations.values():
            for response in operation.get("responses", {}).values():
                content = response.setdefault("content", {})
                if not content:
                    content["application/json"] = {"schema": _enveloped(None)}
                elif "application/json" in content:
                    content["application/json"]["schema"] = _enveloped(content["application/json"].get("schema"))
    return result
