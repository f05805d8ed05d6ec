"""Refuses JSON request bodies nested deeper than any route needs (core.json_depth), before a parser or view sees
them."""

from __future__ import annotations

from api.envelope import INVALID, error_response
from core.json_depth import MAX_JSON_DEPTH, json_depth


def is_json(content_type: str) -> bool:
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json" or media_type.endswith("+json")


class JSONDepthMiddleware:
    """Sync-only, like EdgeCheckMiddleware beside it (one thread for the whole chain under ASGI)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if is_json(request.content_type or "") and request.method not in ("GET", "HEAD", "OPTIONS"):
            depth = json_depth(request.body)
            if depth > MAX_JSON_DEPTH:
                return error_response(INVALID, f"the JSON body nests {depth} levels deep; at most {MAX_JSON_DEPTH} levels are accepted")
        return self.get_response(request)
