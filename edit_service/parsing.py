"""The edit service's one JSON parser: DRF's, with a nesting limit.

Python's json module recurses per nesting level, so `[[[[...` a hundred thousand deep raises RecursionError (a 500
with DRF's parser); a document just under the interpreter's limit parses but fails later, wherever the value is
walked recursively (validation, the error echo, the renderer). No request of the edit service nests anywhere near
MAX_DEPTH levels.
"""

from rest_framework import parsers
from rest_framework.exceptions import ParseError

MAX_DEPTH = 64


def _deeper_than(value, limit: int) -> bool:
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in item)
    return False


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        too_deep = ParseError(f"JSON parse error - the document nests deeper than {MAX_DEPTH} levels")
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise too_deep from None
        if _deeper_than(data, MAX_DEPTH):
            raise too_deep
        return data
