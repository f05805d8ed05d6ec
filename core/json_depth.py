"""How deeply a JSON text nests, measured on its bytes before any parser sees it (Django-free: the gateway's edge
and the edit service's parser both refuse bodies deeper than MAX_JSON_DEPTH with it).

Python's json parser recurses per level and raises RecursionError at about a thousand levels; a body somewhat less
deep parses but breaks later (orjson writes at most 254 levels; recursive validation and rendering). No request of
either service nests anywhere near MAX_JSON_DEPTH.
"""

from __future__ import annotations

import re
from itertools import accumulate

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
