"""The gateway's response envelope {code, message, data} and its error codes.

Every JSON response goes through here: DRF responses via the renderer and exception handler, Django's own 404/500
via the handlers named in urls.py, middleware rejections via `error_response`. On the way out, absolute paths of the
host install in any text (a library's exception naming a file, a stored conversion error) get neutral names
(api/host_paths.py).
"""

from __future__ import annotations

import logging

from django.core.exceptions import DisallowedHost, RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404, HttpResponse, JsonResponse
from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

# the codes and errors live in core/errors.py; the names marked noqa are only re-exported for modules that import them from here
from core.errors import (
    CONFLICT,  # noqa: F401
    CROSS_SITE,  # noqa: F401
    HTTP_STATUS,
    INTERNAL,
    INVALID,
    NOT_FOUND,
    OK,
    TOO_LARGE,
    TOO_MANY_REQUESTS,  # noqa: F401
    UNAUTHORIZED,
    UPSTREAM,  # noqa: F401
    ApplicationError,
    Invalid,
    TooLarge,
)
from api.host_paths import neutral_paths, neutral_paths_in_json

logger = logging.getLogger(__name__)


def envelope(data=None, code: int = OK, message: str = "ok") -> dict:
    return {"code": code, "message": neutral_paths(message), "data": data}


def enveloped_json(data_json: bytes) -> HttpResponse:
    """A success envelope around data that is already JSON (a fast path that skips DRF's renderer)."""
    return HttpResponse(b'{"code":0,"message":"ok","data":' + neutral_paths_in_json(data_json) + b"}", content_type="application/json")


def error_response(code: int, message: str, data=None, http_status: int | None = None, headers: dict[str, str] | None = None) -> JsonResponse:
    return JsonResponse(envelope(data, code, message), status=http_status or HTTP_STATUS[code], headers=headers)


class EnvelopeJSONRenderer(JSONRenderer):
    """Wraps successful payloads; error payloads arrive already enveloped from the exception handler."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        response = (renderer_context or {}).get("response")
        if response is not None and not getattr(response, "enveloped", False):
            data = envelope(data)
        return neutral_paths_in_json(super().render(data, accepted_media_type, renderer_context))


class JSONOnlyNegotiation(DefaultContentNegotiation):
    """The API answers JSON (or a file) whatever the Accept header says: a strict client never gets a 406."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def _first_message(detail) -> str:
    if isinstance(detail, dict):
        key, value = next(iter(detail.items()))
        return f"{key}: {_first_message(value)}" if key != "non_field_errors" else _first_message(value)
    if isinstance(detail, list) and detail:
        return _first_message(detail[0])
    return str(detail)


def _envelope_for(exc: ApplicationError | exceptions.APIException) -> tuple[int, str, object, int]:
    if isinstance(exc, ApplicationError):
        return exc.code, exc.message, exc.data, exc.status
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        return UNAUTHORIZED, "missing or invalid bearer token", None, 401
    if isinstance(exc, exceptions.NotFound):
        return NOT_FOUND, "not found", None, 404
    if isinstance(exc, exceptions.ValidationError):
        return INVALID, _first_message(exc.detail), exc.detail, HTTP_STATUS[INVALID]
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return INVALID, f"{exc.detail} (send the body as the route's documented content type)", None, HTTP_STATUS[INVALID]
    # Wrong method, unacceptable media type, throttling: all request errors, so 40001 with the status of 40001.
    return INVALID, _first_message(exc.detail), None, HTTP_STATUS[INVALID]


def envelope_exception_handler(exc, context):
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, RequestDataTooBig):
        exc = TooLarge("request body exceeds the size limit of this route")
    elif isinstance(exc, (TooManyFieldsSent, TooManyFilesSent)):  # a query string or form of thousands of fields: the caller's error
        exc = Invalid(f"the request has too many query or form fields ({exc})")
    if not isinstance(exc, (ApplicationError, exceptions.APIException)):
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
    return error_response(NOT_FOUND, f"no route for {request.method} {request.path_info}")


def server_error_view(request):
    return error_response(INTERNAL, "internal server error")


def bad_request_view(request, exception=None):
    if isinstance(exception, DisallowedHost):
        return error_response(INVALID, f"{exception} (a Host header this gateway does not answer; see allowedHosts)")
    if isinstance(exception, RequestDataTooBig):
        return error_response(TOO_LARGE, "request body exceeds the size limit of this route")
    return error_response(INVALID, "bad request")
