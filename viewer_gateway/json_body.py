"""Refuses JSON request bodies nested deeper than any route needs, before a parser or view sees them.

Python's json parser raises RecursionError (an answer 500) at about a thousand levels, and a body somewhat less deep
parses but breaks later: orjson refuses to write more than 254 levels, so such a value, once stored, would break
every listing that contains it. No route of the API takes more than a handful of levels.
"""

from __future__ import annotations

import re
from itertools import accumulate

from api.envelope import INVALID, error_response

MAX_JSON_DEPTH = 64
# a JSON string, escapes included (unrolled so that long strings are matched without backtracking)
_STRING_RE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = b"[]{}"
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in _BRACKETS)
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def json_depth(body: bytes) -> int:
    """How deeply the arrays and objects of a JSON text nest (0 for a scalar); brackets inside strings do not
    count. Malformed text gets an estimate, which the parser then refuses anyway."""
    brackets = _STRING_RE.sub(b"", body).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


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
