"""Host install paths given neutral names in what a client sees, also inside JSON that escapes them."""

import json

from core.host_paths import json_forms, neutral_paths


def test_a_path_is_named_neutrally_in_json_whether_or_not_its_non_ascii_characters_are_escaped():
    prefixes = {"/srv/jürgen/data": "<data>", "/opt/viewer": "<install>"}
    document = {"error": "cannot open /srv/jürgen/data/models/m_1/model.ifc", "where": "/opt/viewer/core/files.py"}
    neutral = {"error": "cannot open <data>/models/m_1/model.ifc", "where": "<install>/core/files.py"}
    for text in (json.dumps(document), json.dumps(document, ensure_ascii=False)):  # as the database keeps it; as DRF writes it
        assert json.loads(neutral_paths(text, json_forms(prefixes))) == neutral
    assert "/srv/j\\u00fcrgen/data" in neutral_paths(json.dumps(document), prefixes)  # the path as it is alone misses the escaped one
