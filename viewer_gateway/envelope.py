"""The gateway's response envelope {code, message, data} and its error codes.

Every JSON response goes through here: DRF responses via the renderer and exception handler, Django's own 404/500
via the handlers named in urls.py, middleware rejections via `error_response`.
"""

from __future__ import annotations

import logging

from django.http import JsonResponse
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

logger = logging.getLogger(__name__)

OK = 0
INVALID = 40001
TOO_LARGE = 40002
UNAUTHORIZED = 40100
NOT_FOUND = 40400
CONFLICT = 40900
INTERNAL = 50000
UPSTREAM = 50200

HTTP_STATUS = {
    INVALID: 400,
    TOO_LARGE: 400,
    UNAUTHORIZED: 401,
    NOT_FOUND: 404,
    CONFLICT: 409,
    INTERNAL: 500,
    UPSTREAM: 502,
}


class ApiError(exceptions.APIException):
    """A business error with an envelope code. Services raise it; the exception handler renders it."""

    code = INVALID

    def __init__(self, message: str, code: int | None = None, data=None, http_status: int | None = None):
        self.code = code if code is not None else self.code
        self.status_code = http_status or HTTP_STATUS[self.code]
        self.data = data
        super().__init__(message)


class InvalidInput(ApiError):
    code = INVALID


class TooLarge(ApiError):
    code = TOO_LARGE


class NotFound(ApiError):
    code = NOT_FOUND


class Conflict(ApiError):
    code = CONFLICT


class UpstreamError(ApiError):
    code = UPSTREAM


def envelope(data=None, code: int = OK, message: str = "ok") -> dict:
    return {"code": code, "message": message, "data": data}


def error_response(code: int, message: str, data=None, http_status: int | None = None) -> JsonResponse:
    return JsonResponse(envelope(data, code, message), status=http_status or HTTP_STATUS[code])


class EnvelopeJSONRenderer(JSONRenderer):
    """Wraps successful payloads; error payloads arrive already enveloped from the exception handler."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        response = (renderer_context or {}).get("response")
        if response is not None and not getattr(response, "enveloped", False):
            data = envelope(data)
        return super().render(data, accepted_media_type, renderer_context)


def _first_message(detail) -> str:
    if isinstance(detail, dict):
        key, value = next(iter(detail.items()))
        return f"{key}: {_first_message(value)}" if key != "non_field_errors" else _first_message(value)
    if isinstance(detail, list) and detail:
        return _first_message(detail[0])
    return str(detail)


def _envelope_for(exc: exceptions.APIException) -> tuple[int, str, object, int]:
    if isinstance(exc, ApiError):
        return exc.code, str(exc.detail), exc.data, exc.status_code
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        return UNAUTHORIZED, "missing or invalid bearer token", None, 401
    if isinstance(exc, exceptions.NotFound):
        return NOT_FOUND, "not found", None, 404
    if isinstance(exc, exceptions.MethodNotAllowed):
        return INVALID, str(exc.detail), None, status.HTTP_405_METHOD_NOT_ALLOWED
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return INVALID, str(exc.detail), None, 415
    if isinstance(exc, exceptions.Throttled):
        return INVALID, str(exc.detail), None, 429
    if isinstance(exc, exceptions.ValidationError):
        return INVALID, _first_message(exc.detail), exc.detail, 400
    if isinstance(exc, exceptions.ParseError):
        return INVALID, str(exc.detail), None, 400
    return INVALID, _first_message(exc.detail), None, exc.status_code


def envelope_exception_handler(exc, context):
    from django.http import Http404

    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    if not isinstance(exc, exceptions.APIException):
        logger.exception("unhandled error in %s", context.get("view"))
        response = Response(envelope(None, INTERNAL, "internal server error"), status=500)
    else:
        code, message, data, http_status = _envelope_for(exc)
        response = Response(envelope(data, code, message), status=http_status)
        if isinstance(exc, exceptions.MethodNotAllowed):
            view = context.get("view")
            if view is not None:
                response["Allow"] = ", ".join(view.allowed_methods)
    response.enveloped = True
    return response


def not_found_view(request, exception=None):
    return error_response(NOT_FOUND, f"no route for {request.method} {request.path}")


def server_error_view(request):
    return error_response(INTERNAL, "internal server error")


def bad_request_view(request, exception=None):
    return error_response(INVALID, "bad request")
