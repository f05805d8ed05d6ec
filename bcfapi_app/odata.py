"""The OData subset the BCF API lists take ($filter, $orderby), parsed by a small recursive-descent parser and
evaluated as a Python predicate over the answer dicts (the same on SQLite and Postgres).

    $filter  := or ; or := and ('or' and)* ; and := unary ('and' unary)* ; unary := 'not' unary | primary
    primary  := '(' or ')' | FIELD OP literal | FIELD '/any(' VAR ':' or-over-VAR ')'
    OP       := eq ne gt ge lt le ; literal := 'text' ('' escapes a quote) | datetime | number | true | false | null
    $orderby := FIELD ['asc' | 'desc'] (',' FIELD ['asc' | 'desc'])*

Each list names its fields (`Fields`: name -> kind text | datetime | list); another field, function or operator is
refused with Invalid naming it. Datetimes follow Foundation 1.7: ISO 8601, a value without zone is UTC.
(odata-query would parse this, but its python-dateutil pin conflicts with ours; docs/decisions/0010 section 7.)
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Callable

from core.errors import Invalid

TEXT, DATETIME, LIST = "text", "datetime", "list"
OPERATORS = ("eq", "ne", "gt", "ge", "lt", "le")
MAX_FILTER_CHARS = 4000
MAX_DEPTH = 50

_TOKEN_RE = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<datetime>\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?)
  | (?P<number>-?\d+(?:\.\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[()/:,])
""", re.VERBOSE)


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    value: object = None


def parse_datetime(text: str) -> datetime.datetime:
    """An ISO 8601 date or date-time; without a zone it is UTC (Foundation 1.7)."""
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise Invalid(f"$filter: {text!r} is not an ISO 8601 date-time", data={"field": "$filter"}) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def _tokens(text: str) -> list[Token]:
    tokens, position = [], 0
    while position < len(text):
        match = _TOKEN_RE.match(text, position)
        if match is None:
            raise Invalid(f"$filter: unexpected {text[position:position + 20]!r} at position {position}", data={"field": "$filter"})
        position = match.end()
        kind = match.lastgroup
        raw = match.group()
        if kind == "space":
            continue
        if kind == "string":
            tokens.append(Token("literal", raw, raw[1:-1].replace("''", "'")))
        elif kind == "datetime" and ("T" in raw or raw.count("-") == 2):
            tokens.append(Token("literal", raw, parse_datetime(raw)))
        elif kind == "number":
            tokens.append(Token("literal", raw, float(raw)))
        elif kind == "name" and raw in ("true", "false", "null"):
            tokens.append(Token("literal", raw, {"true": True, "false": False, "null": None}[raw]))
        else:
            tokens.append(Token(kind, raw))
    return tokens


class _Parser:
    """Builds the AST: ("or"|"and", left, right), ("not", node), ("cmp", op, field, value), ("any", field, var, node)."""

    def __init__(self, text: str, fields: dict[str, str]):
        self.tokens, self.position, self.fields, self.variables = _tokens(text), 0, fields, set()

    def peek(self, offset: int = 0) -> Token | None:
        index = self.position + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def take(self, kind: str | None = None, text: str | None = None) -> Token:
        token = self.peek()
        if token is None or (kind and token.kind != kind) or (text and token.text != text):
            wanted = text or kind or "more"
            found = "the end" if token is None else repr(token.text)
            raise Invalid(f"$filter: expected {wanted}, found {found}", data={"field": "$filter"})
        self.position += 1
        return token

    def keyword(self, word: str) -> bool:
        token = self.peek()
        if token is not None and token.kind == "name" and token.text == word:
            self.position += 1
            return True
        return False

    def parse(self):
        node = self.disjunction(0)
        if self.peek() is not None:
            raise Invalid(f"$filter: unexpected {self.peek().text!r}", data={"field": "$filter"})
        return node

    def disjunction(self, depth: int):
        if depth > MAX_DEPTH:
            raise Invalid("$filter: nested too deeply", data={"field": "$filter"})
        node = self.conjunction(depth)
        while self.keyword("or"):
            node = ("or", node, self.conjunction(depth))
        return node

    def conjunction(self, depth: int):
        node = self.unary(depth)
        while self.keyword("and"):
            node = ("and", node, self.unary(depth))
        return node

    def unary(self, depth: int):
        if self.keyword("not"):
            return ("not", self.unary(depth + 1))
        token = self.peek()
        if token is not None and token.text == "(":
            self.take(text="(")
            node = self.disjunction(depth + 1)
            self.take(text=")")
            return node
        return self.comparison(depth)

    def field(self) -> str:
        token = self.take("name")
        if token.text in self.variables:
            return token.text
        if self.peek() is not None and self.peek().text == "(":
            raise Invalid(f"$filter: function {token.text} is not supported", data={"field": "$filter"})
        if token.text not in self.fields:
            raise Invalid(f"$filter: unknown field {token.text} (allowed: {', '.join(sorted(self.fields))})", data={"field": "$filter"})
        return token.text

    def comparison(self, depth: int):
        name = self.field()
        if self.peek() is not None and self.peek().text == "/":
            return self.any_of(name, depth)
        if name not in self.variables and self.fields[name] == LIST:
            raise Invalid(f"$filter: {name} is a list: use {name}/any(x: x eq '...')", data={"field": "$filter"})
        operator = self.take("name").text
        if operator not in OPERATORS:
            raise Invalid(f"$filter: unknown operator {operator} (allowed: {', '.join(OPERATORS)})", data={"field": "$filter"})
        value = self.take("literal").value
        if name not in self.variables and self.fields[name] == DATETIME and isinstance(value, str):
            value = parse_datetime(value)
        return ("cmp", operator, name, value)

    def any_of(self, name: str, depth: int):
        self.take(text="/")
        function = self.take("name").text
        if function != "any" or self.fields.get(name) != LIST:
            raise Invalid(f"$filter: {name}/{function} is not supported (only a list's any)", data={"field": "$filter"})
        self.take(text="(")
        variable = self.take("name").text
        self.take(text=":")
        self.variables.add(variable)
        inner = self.disjunction(depth + 1)
        self.variables.discard(variable)
        self.take(text=")")
        return ("any", name, variable, inner)


def parse_filter(text: str, fields: dict[str, str]):
    """The AST of a $filter over `fields`; Invalid naming what is wrong."""
    if len(text) > MAX_FILTER_CHARS:
        raise Invalid(f"$filter: at most {MAX_FILTER_CHARS} characters", data={"field": "$filter"})
    return _Parser(text, fields).parse()


def _compare(operator: str, left, right) -> bool:
    if operator == "eq":
        return left == right
    if operator == "ne":
        return left != right
    if left is None or right is None or type(left) is not type(right):
        return False
    return {"gt": left > right, "ge": left >= right, "lt": left < right, "le": left <= right}[operator]


def _value(row: dict, name: str, fields: dict[str, str], bound: dict):
    if name in bound:
        return bound[name]
    value = row.get(name)
    if fields.get(name) == DATETIME and isinstance(value, str):
        return parse_datetime(value)
    return value


def _evaluate(node, row: dict, fields: dict[str, str], bound: dict) -> bool:
    kind = node[0]
    if kind == "or":
        return _evaluate(node[1], row, fields, bound) or _evaluate(node[2], row, fields, bound)
    if kind == "and":
        return _evaluate(node[1], row, fields, bound) and _evaluate(node[2], row, fields, bound)
    if kind == "not":
        return not _evaluate(node[1], row, fields, bound)
    if kind == "any":
        _, name, variable, inner = node
        return any(_evaluate(inner, row, fields, {**bound, variable: item}) for item in row.get(name) or ())
    _, operator, name, value = node
    return _compare(operator, _value(row, name, fields, bound), value)


def filter_predicate(text: str | None, fields: dict[str, str]) -> Callable[[dict], bool]:
    """A predicate over answer dicts for a $filter (everything passes when there is none)."""
    if not text:
        return lambda row: True
    tree = parse_filter(text, fields)
    return lambda row: _evaluate(tree, row, fields, {})


def ordered(rows: list[dict], text: str | None, sortable: dict[str, str], default: str) -> list[dict]:
    """The rows sorted by a $orderby over `sortable` (name -> kind), `default` (ascending) when there is none; rows
    without the value come first ascending, last descending."""
    keys = []
    for part in (text or default).split(","):
        words = part.split()
        if not words or len(words) > 2 or (len(words) == 2 and words[1] not in ("asc", "desc")):
            raise Invalid(f"$orderby: {part.strip()!r} is not 'field [asc|desc]'", data={"field": "$orderby"})
        if words[0] not in sortable:
            raise Invalid(f"$orderby: unknown field {words[0]} (allowed: {', '.join(sorted(sortable))})", data={"field": "$orderby"})
        keys.append((words[0], len(words) == 2 and words[1] == "desc"))
    result = list(rows)
    for name, descending in reversed(keys):  # stable sorts, the last key first
        result.sort(key=lambda row, name=name: _sort_key(row, name, sortable), reverse=descending)
    return result


def _sort_key(row: dict, name: str, sortable: dict[str, str]):
    value = _value(row, name, sortable, {})
    return (0, "") if value is None else (1, value)


def query_list(request, rows: list[dict], fields: dict[str, str], sortable: dict[str, str], default_order: str) -> list[dict]:
    """The rows a list request asks for: filtered by $filter, sorted by $orderby (paging is the caller's)."""
    keep = filter_predicate(request.query_params.get("$filter"), fields)
    return ordered([row for row in rows if keep(row)], request.query_params.get("$orderby"), sortable, default_order)
