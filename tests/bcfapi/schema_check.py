"""Every answer of the BCF API and the Foundation API checked against the official JSON schemas (tests/bcfapi/schemas,
copied verbatim from buildingSMART; see its SOURCE.md).

`ANSWERS` names, for every route and method, the schema of a successful answer; `check_answer` validates a response
with draft-03 (the schemas' dialect) and adds one rule draft-03 cannot express: every key we answer must be a
property of its schema (the API allows extra properties, so a misspelt key would pass silently otherwise). Error
answers (4xx/5xx) are checked against error.json (`message` required; the gateway's envelope keys `code` and `data`
are the extra properties the API allows). tests/bcfapi/conftest.py runs `check_answer` on every response a test in
tests/bcfapi gets from a /bcf/ or /foundation/ path; test_schema_coverage.py fails for a route without a row here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import urljoin

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT3

SCHEMAS = Path(__file__).parent / "schemas"
BCF = "bcf/"
FOUNDATION = "foundation/"  # the files of foundation-API's schemas/ folder


@dataclass(frozen=True)
class Answer:
    """What a route answers on success: a JSON schema (`many`: an array of it), no body, an image or a file, or an
    OAuth2 exchange (RFC 6749: a page, a redirect or a token answer; not in the BCF/Foundation schemas)."""

    schema: str = ""
    many: bool = False
    kind: str = "json"  # json | empty | image | file | oauth2


def one(schema: str) -> Answer:
    return Answer(schema)


def many(schema: str) -> Answer:
    return Answer(schema, many=True)


EMPTY = Answer(kind="empty")
IMAGE = Answer(kind="image")
FILE = Answer(kind="file")
OAUTH2 = Answer(kind="oauth2")

TOPIC = BCF + "Collaboration/Topic/topic_GET.json"
COMMENT = BCF + "Collaboration/Comment/comment_GET.json"
VIEWPOINT = BCF + "Collaboration/Viewpoint/viewpoint_GET.json"
DOCUMENT_REFERENCE = BCF + "Collaboration/DocumentReference/document_reference_GET.json"
PROJECT = BCF + "Project/project_GET.json"

# (route name, method) -> the answer on success (the routes of docs/decisions/0010 section 2)
ANSWERS: dict[tuple[str, str], Answer] = {
    ("bcf-versions", "GET"): one(FOUNDATION + "versions_GET.json"),
    ("bcf-auth", "GET"): one(FOUNDATION + "auth_GET.json"),
    ("bcf-current-user", "GET"): one(FOUNDATION + "user_GET.json"),
    ("oauth2-authorize", "GET"): OAUTH2,
    ("oauth2-authorize", "POST"): OAUTH2,
    ("oauth2-token", "POST"): OAUTH2,
    ("oauth2-revoke", "POST"): OAUTH2,
    ("bcf-projects", "GET"): many(PROJECT),
    ("bcf-project", "GET"): one(PROJECT),
    ("bcf-project", "PUT"): one(PROJECT),
    ("bcf-extensions", "GET"): one(BCF + "Project/extensions_GET.json"),
    ("bcf-files-information", "GET"): one(BCF + "Collaboration/File/project_files_information_GET.json"),
    ("bcf-topics", "GET"): many(TOPIC),
    ("bcf-topics", "POST"): one(TOPIC),
    ("bcf-topics-events", "GET"): many(BCF + "Collaboration/Events/topic_event_GET.json"),
    ("bcf-comments-events", "GET"): many(BCF + "Collaboration/Events/comment_event_GET.json"),
    ("bcf-topic", "GET"): one(TOPIC),
    ("bcf-topic", "PUT"): one(TOPIC),
    ("bcf-topic", "DELETE"): EMPTY,
    ("bcf-topic-files", "GET"): many(BCF + "Collaboration/File/file_GET.json"),
    ("bcf-topic-files", "PUT"): many(BCF + "Collaboration/File/file_GET.json"),
    ("bcf-related-topics", "GET"): many(BCF + "Collaboration/RelatedTopic/related_topic_GET.json"),
    ("bcf-related-topics", "PUT"): many(BCF + "Collaboration/RelatedTopic/related_topic_GET.json"),
    ("bcf-topic-events", "GET"): many(BCF + "Collaboration/Events/topic_event_GET.json"),
    ("bcf-document-references", "GET"): many(DOCUMENT_REFERENCE),
    ("bcf-document-references", "POST"): one(DOCUMENT_REFERENCE),
    ("bcf-document-reference", "PUT"): one(DOCUMENT_REFERENCE),
    ("bcf-comments", "GET"): many(COMMENT),
    ("bcf-comments", "POST"): one(COMMENT),
    ("bcf-comment", "GET"): one(COMMENT),
    ("bcf-comment", "PUT"): one(COMMENT),
    ("bcf-comment", "DELETE"): EMPTY,
    ("bcf-comment-events", "GET"): many(BCF + "Collaboration/Events/comment_event_GET.json"),
    ("bcf-viewpoints", "GET"): many(VIEWPOINT),
    ("bcf-viewpoints", "POST"): one(VIEWPOINT),
    ("bcf-viewpoint", "GET"): one(VIEWPOINT),
    ("bcf-viewpoint", "DELETE"): EMPTY,
    ("bcf-viewpoint-snapshot", "GET"): IMAGE,
    ("bcf-viewpoint-bitmap", "GET"): IMAGE,
    ("bcf-viewpoint-selection", "GET"): one(BCF + "Collaboration/Viewpoint/selection_GET.json"),
    ("bcf-viewpoint-coloring", "GET"): one(BCF + "Collaboration/Viewpoint/coloring_GET.json"),
    ("bcf-viewpoint-visibility", "GET"): one(BCF + "Collaboration/Viewpoint/visibility_GET.json"),
    ("bcf-documents", "GET"): many(BCF + "Collaboration/Document/document_GET.json"),
    ("bcf-documents", "POST"): one(BCF + "Collaboration/Document/document_GET.json"),
    ("bcf-document", "GET"): FILE,
}


def _uri(relative: str) -> str:
    return (SCHEMAS / relative).resolve().as_uri()


@cache
def registry() -> Registry:
    """Every vendored schema under its file URI, so relative $refs (../Action/x.json) resolve as published."""
    resources = []
    for path in sorted(SCHEMAS.rglob("*.json")):
        contents = json.loads(path.read_text(encoding="utf-8"))
        resources.append((path.resolve().as_uri(), Resource.from_contents(contents, default_specification=DRAFT3)))
    return Registry().with_resources(resources)


def _schema_at(uri: str) -> dict:
    return registry().contents(uri)


class AnswerMismatch(AssertionError):
    pass


def undeclared_keys(instance, schema: dict, uri: str, where: str = "$") -> list[str]:
    """The keys of `instance` (at any depth) that its schema does not declare as properties."""
    if "$ref" in schema:
        uri = urljoin(uri, schema["$ref"])
        return undeclared_keys(instance, _schema_at(uri), uri, where)
    found = []
    if isinstance(instance, dict):
        properties = schema.get("properties", {})
        for key, value in instance.items():
            if key not in properties:
                found.append(f"{where}.{key}")
            else:
                found += undeclared_keys(value, properties[key], uri, f"{where}.{key}")
    elif isinstance(instance, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(instance):
            found += undeclared_keys(item, schema["items"], uri, f"{where}[{index}]")
    return found


def validate(instance, schema: str, *, is_many: bool = False, strict: bool = True) -> None:
    """Raises AnswerMismatch when `instance` does not fit the schema (draft-03), or, when strict, answers a key the
    schema does not declare."""
    uri = _uri(schema)
    wrapper = {"type": "array", "items": {"$ref": uri}} if is_many else {"$ref": uri}
    errors = sorted(jsonschema.Draft3Validator(wrapper, registry=registry()).iter_errors(instance), key=lambda e: list(e.path))
    if errors:
        raise AnswerMismatch(f"{schema}: " + "; ".join(f"{'/'.join(map(str, e.path)) or '$'}: {e.message}" for e in errors[:5]))
    if strict:
        extra = undeclared_keys(instance, wrapper if not is_many else {"items": {"$ref": uri}}, uri)
        if extra:
            raise AnswerMismatch(f"{schema}: keys the schema does not declare: {', '.join(extra[:10])}")


def error_schema(path: str) -> str:
    return FOUNDATION + "error.json" if path.startswith("/foundation/") else BCF + "error.json"


def check_answer(route_name: str, method: str, path: str, response) -> None:
    """Validates one response of a BCF/Foundation route: an error body against error.json, a success against its row."""
    status = response.status_code
    answer = ANSWERS.get((route_name, method))
    if answer is None:
        raise AnswerMismatch(f"no schema row for {method} {route_name} (add it to tests/bcfapi/schema_check.py)")
    if answer.kind == "oauth2" or method in ("HEAD", "OPTIONS") or status == 304:
        return
    if status >= 400:
        validate(json.loads(response.content), error_schema(path), strict=False)
        return
    if answer.kind == "empty":  # "200 - OK" and no body (README 3.2.5, 3.4.5, 3.5.9)
        assert status in (200, 204) and not response.content.strip(), (route_name, status, response.content[:200])
        return
    content_type = response.get("Content-Type", "")
    if answer.kind == "image":
        assert content_type.startswith("image/"), (route_name, content_type)
        return
    if answer.kind == "file":
        assert not content_type.startswith("application/json") or status != 200, (route_name, content_type)
        return
    assert content_type.startswith("application/json"), (route_name, status, content_type)
    validate(json.loads(response.content), answer.schema, is_many=answer.many)
