"""How every BCF API and Foundation API view answers: bare JSON, the error body, ETags and paging headers.

The BCF API answers resources as bare JSON (no {code, message, data} envelope); errors keep the gateway's envelope,
which satisfies the API's error.json (`message` is the one required property, extra keys are allowed). Views derive
from `BcfView`: its renderer writes the data as it is, every 200 GET carries `ETag` (the quoted SHA-256 of the answer
bytes) and an `If-None-Match` naming it answers 304; `check_if_match` guards PUT and DELETE against a stale copy
(412); `paged` applies `$top`/`$skip` and answers `X-Total-Count` and `Link: <...>; rel="next"` (docs/api/bcf.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from urllib.parse import urlencode

from django.http import HttpResponseNotModified
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from api.host_paths import neutral_paths_in_json
from core.errors import Conflict, Invalid

# $top when a request names none, and the most one page holds (docs/api/bcf.md "Paging")
PAGE_DEFAULT = 500
PAGE_MAX = 500


class PreconditionFailed(Conflict):
    """If-Match named a version of the resource that is no longer current (HTTP 412, code 40900 in the body)."""

    def __init__(self, message: str = "the resource changed since it was read (If-Match does not match its ETag)"):
        super().__init__(message, http_status=412)


class BareJSONRenderer(JSONRenderer):
    """The data as JSON, no envelope (error bodies arrive already enveloped from the exception handler)."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return neutral_paths_in_json(super().render(data, accepted_media_type, renderer_context))


def answer_bytes(data) -> bytes:
    """The bytes a BcfView answers for `data` (what its ETag is computed from)."""
    return BareJSONRenderer().render(data)


def etag_of(data) -> str:
    """The quoted strong ETag of the answer `data` would get."""
    return etag_of_bytes(answer_bytes(data))


def etag_of_bytes(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest() + '"'


def _listed_tags(header: str) -> set[str]:
    """The entity tags of an If-Match / If-None-Match header (weak tags compared by their opaque part)."""
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}


def check_if_match(request, current: dict, authorization: Callable[[], dict] | None = None) -> None:
    """Refuses a PUT/DELETE whose If-Match names another version than `current` (the resource's GET answer data);
    no If-Match: the change goes ahead (the conventions make the header optional). `authorization` gives the caller's
    `authorization` of a resource whose GET adds it on includeAuthorization=true: the ETag of that answer matches too
    (the PUT need not repeat the query the client read with)."""
    header = request.headers.get("If-Match")
    if not header:
        return
    tags = _listed_tags(header)
    if "*" in tags or etag_of(current) in tags:
        return
    if authorization is None or etag_of({**current, "authorization": authorization()}) not in tags:
        raise PreconditionFailed()


def bare(data, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A bare-JSON answer (`BcfView` adds the ETag of a 200 GET)."""
    return Response(data, status=status, headers=headers)


def _query_int(request, name: str, default: int, maximum: int | None = None) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise Invalid(f"{name} must be a whole number", data={"field": name}) from None
    if value < 0 or (maximum is not None and value > maximum):
        raise Invalid(f"{name} must be between 0 and {maximum}" if maximum is not None else f"{name} must not be negative", data={"field": name})
    return value


def paged(request, items: list) -> Response:
    """One page of `items` (already filtered and ordered) by `$skip` and `$top`, with X-Total-Count and, when more
    follow, a Link to the next page (the same query with $skip moved on)."""
    skip = _query_int(request, "$skip", 0)
    top = _query_int(request, "$top", PAGE_DEFAULT, PAGE_MAX)
    page = items[skip:skip + top]
    headers = {"X-Total-Count": str(len(items))}
    if skip + top < len(items) and top > 0:
        query = {**request.query_params.dict(), "$skip": str(skip + top), "$top": str(top)}
        headers["Link"] = f'<{request.build_absolute_uri(request.path)}?{urlencode(query)}>; rel="next"'
    return bare(page, headers=headers)


class BcfView(APIView):
    """The base of every Foundation/BCF API view: JSON bodies in, bare JSON out, ETag and If-None-Match on GET."""

    renderer_classes = [BareJSONRenderer]
    parser_classes = [JSONParser]

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if request.method not in ("GET", "HEAD") or response.status_code != 200 or not isinstance(response, Response):
            return response
        response.render()
        tag = etag_of_bytes(response.content)
        response["ETag"] = tag
        wanted = _listed_tags(request.headers.get("If-None-Match") or "")
        if tag in wanted or "*" in wanted:
            not_modified = HttpResponseNotModified()
            not_modified["ETag"] = tag
            return not_modified
        return response
