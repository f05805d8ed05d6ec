"""Error bodies of the edit service: {detail: ...}; validation errors as a list of {loc, msg, type, input?, ctx?}."""

import logging

from django.conf import settings
from django.http import JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response

from core.host_paths import host_prefixes, neutral_paths_in
from edit_service.engine.errors import EngineError

logger = logging.getLogger(__name__)


def validation_items(detail, loc=("body",), data=None) -> list[dict]:
    """DRF's nested error dict -> [{loc, msg, type, input?}]."""
    items = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            sub = data.get(key) if isinstance(data, dict) else None
            items += validation_items(value, loc if key == "non_field_errors" else (*loc, key), sub)
    elif isinstance(detail, list):
        if all(isinstance(d, exceptions.ErrorDetail) or isinstance(d, str) for d in detail):
            for message in detail:
                item = {"loc": list(loc), "msg": str(message), "type": getattr(message, "code", "value_error")}
                if data is not None:
                    item["input"] = data
                items.append(item)
        else:
            for index, value in enumerate(detail):
                items += validation_items(value, (*loc, index), data[index] if isinstance(data, list) and index < len(data) else None)
    return items


def detail_exception_handler(exc, context):
    if isinstance(exc, EngineError):
        # a failed run's detail ends with its stderr: tracebacks naming the host's checkout and virtualenv
        return Response({"detail": neutral_paths_in(exc.detail, host_prefixes(settings.DATA_DIR))}, status=exc.status,
                        headers=getattr(exc, "headers", None))
    if isinstance(exc, exceptions.ValidationError):
        request = context.get("request")
        data = getattr(request, "data", None) if request is not None else None
        return Response({"detail": validation_items(exc.detail, data=data)}, status=422)
    if isinstance(exc, exceptions.ParseError):
        return Response({"detail": [{"loc": ["body"], "msg": str(exc.detail), "type": "json_invalid"}]}, status=422)
    if isinstance(exc, exceptions.APIException):
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        return Response({"detail": neutral_paths_in(detail, host_prefixes(settings.DATA_DIR))}, status=exc.status_code)
    logger.exception("unhandled error in %s", context.get("view"))
    return Response({"detail": "internal error"}, status=500)


def not_found_view(request, exception=None):
    return JsonResponse({"detail": "Not Found"}, status=404)


def server_error_view(request):
    return JsonResponse({"detail": "internal error"}, status=500)
