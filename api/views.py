"""What every view does with a request before it calls a use case: read the body as a JSON object, validate it."""

from __future__ import annotations

from core.errors import Invalid


def validated(serializer_class, data, context: dict | None = None) -> dict:
    """The serializer's validated data; DRF's ValidationError (40001, the first message) when `data` does not fit."""
    serializer = serializer_class(data=data, context=context or {})
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def json_object(request) -> dict:
    """The request body as a JSON object ({} for an empty body); Invalid for any other JSON value."""
    data = request.data
    if not isinstance(data, dict):
        raise Invalid("the body must be a JSON object")
    return data or {}
