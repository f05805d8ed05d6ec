"""The edit service's one JSON parser: DRF's, refusing a body nested deeper than core.json_depth.MAX_JSON_DEPTH
before it is parsed (Python's json module recurses per level: `[[[[...` a hundred thousand deep would be a 500)."""

import io

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from core.json_depth import MAX_JSON_DEPTH, json_depth


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        body = stream.read()
        if json_depth(body) > MAX_JSON_DEPTH:
            raise ParseError(f"JSON parse error - the document nests deeper than {MAX_JSON_DEPTH} levels")
        return super().parse(io.BytesIO(body), media_type, parser_context)
