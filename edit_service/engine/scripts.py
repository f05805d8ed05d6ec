"""Build-script source handling: contract check, PARAMS read and rewrite (libcst, formatting kept), script diffs."""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import math
import threading

import libcst as cst

from edit_service.engine.errors import Invalid

PARAMS_NAME = "PARAMS"
# CPython before 3.11.8 keeps the recursion depth of ast's C constructor in per-interpreter state (gh-106905): when a
# garbage collection runs Python code in the middle of one thread's ast.parse and another thread parses meanwhile,
# one of them fails with "SystemError: AST constructor recursion depth mismatch". The service runs each request in a
# thread of its own, so these functions run in the single-threaded children of core.script_analysis (analysis.py);
# every text parse of this package also takes this lock, so a call in a threaded process stays safe.
AST_LOCK = threading.Lock()


def script_hash(script: str) -> str:
    return hashlib.sha256(script.encode("utf-8")).hexdigest()


def _params_assignment(module: ast.Module) -> ast.Assign | None:
    for node in module.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == PARAMS_NAME for t in node.targets):
            return node
    return None


def check_contract(script: str) -> dict:
    """Parses the script and checks the contract: a top-level literal dict PARAMS and a build(params, out_path)
    function. Returns PARAMS. Raises Invalid with a precise reason."""
    if not isinstance(script, str) or not script.strip():
        raise Invalid("the script is empty")
    module = parse(script)
    params = read_params(module)
    build = next((n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "build"), None)
    if build is None or len(build.args.args) < 2:
        raise Invalid("the script must define build(params, out_path) at top level")
    return params


def parse(script: str) -> ast.Module:
    try:
        with AST_LOCK:
            return ast.parse(script)
    except SyntaxError as exc:
        raise Invalid(f"the script has a syntax error at line {exc.lineno}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise Invalid("the script is nested too deeply to be read") from None


def literal_text(text: str):
    """ast.literal_eval of source text (it parses the text first)."""
    with AST_LOCK:
        return ast.literal_eval(text)


def _json_problem(value, path: str) -> str | None:
    """Where a literal is not JSON (sets, tuples, bytes, complex, non-string keys, NaN/inf), else None."""
    if value is None or isinstance(value, (bool, str)):
        return None
    if isinstance(value, (int, float)):
        return None if math.isfinite(value) else f"{path} is {value!r}, not a finite number"
    if isinstance(value, list):
        return next((p for i, item in enumerate(value) if (p := _json_problem(item, f"{path}[{i}]"))), None)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has the key {key!r}; keys must be strings"
            if problem := _json_problem(item, f"{path}[{key!r}]"):
                return problem
        return None
    return f"{path} is a {type(value).__name__}; PARAMS hold JSON values only (dict, list, string, number, bool, None)"


def read_params(source: str | ast.Module) -> dict:
    """PARAMS by syntax analysis, without running anything; JSON-compatible values only."""
    module = parse(source) if isinstance(source, str) else source
    assignment = _params_assignment(module)
    if assignment is None:
        raise Invalid(f"the script has no top-level {PARAMS_NAME} = {{...}} literal")
    try:
        params = ast.literal_eval(assignment.value)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise Invalid(f"{PARAMS_NAME} must be a literal dict (JSON-compatible values only, nothing computed)") from None
    if not isinstance(params, dict):
        raise Invalid(f"{PARAMS_NAME} must be a dict")
    problem = _json_problem(params, PARAMS_NAME)
    if problem:
        raise Invalid(problem)
    return params


def python_literal(value) -> str:
    """A JSON-compatible value as Python source."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON string escapes are valid Python
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Invalid("PARAMS values must be finite numbers")
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(python_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise Invalid("PARAMS keys must be strings")
        return "{" + ", ".join(f"{python_literal(k)}: {python_literal(v)}" for k, v in value.items()) + "}"
    raise Invalid(f"PARAMS values must be JSON-compatible, got {type(value).__name__}")


class _ParamsRewriter(cst.CSTTransformer):
    """Rewrites the PARAMS dict entry by entry: changed values are replaced, removed keys dropped, new keys appended;
    untouched entries keep their formatting and comments."""

    def __init__(self, new_params: dict):
        self.new_params = new_params
        self.found = False

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        if not any(isinstance(t.target, cst.Name) and t.target.value == PARAMS_NAME for t in original.targets):
            return updated
        if not isinstance(updated.value, cst.Dict):
            raise Invalid(f"{PARAMS_NAME} must be a dict literal")
        self.found = True
        elements, seen = [], set()
        for element in updated.value.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                raise Invalid(f"{PARAMS_NAME} keys must be plain string literals")
            key = literal_text(element.key.value)
            seen.add(key)
            if key not in self.new_params:
                continue
            old_value = literal_text(cst.Module([]).code_for_node(element.value))
            if old_value != self.new_params[key] or type(old_value) is not type(self.new_params[key]):
                element = element.with_changes(value=cst.parse_expression(python_literal(self.new_params[key])))
            elements.append(element)
        appended = [
            cst.DictElement(cst.parse_expression(python_literal(k)), cst.parse_expression(python_literal(v)))
            for k, v in self.new_params.items()
            if k not in seen
        ]
        if appended:
            separator = _separator(updated.value)
            if elements:
                appended[-1] = appended[-1].with_changes(comma=elements[-1].comma)
                elements[-1] = elements[-1].with_changes(comma=separator)
            appended = [e.with_changes(comma=separator) for e in appended[:-1]] + appended[-1:]
            elements += appended
        return updated.with_changes(value=updated.value.with_changes(elements=elements))


def _separator(dict_node: cst.Dict) -> cst.Comma:
    """The comma + whitespace used between entries (a newline and indent in a multi-line dict), without comments."""
    for element in dict_node.elements[:-1]:
        if isinstance(element.comma, cst.Comma):
            after = element.comma.whitespace_after
            if isinstance(after, cst.ParenthesizedWhitespace):
                after = after.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
            return element.comma.with_changes(whitespace_after=after)
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def rewrite_params(script: str, new_params: dict) -> str:
    if not isinstance(new_params, dict):
        raise Invalid("params must be a JSON object")
    python_literal(new_params)  # validates the values
    module = cst.parse_module(script)
    rewriter = _ParamsRewriter(new_params)
    rewritten = module.visit(rewriter)
    if not rewriter.found:
        raise Invalid(f"the script has no top-level {PARAMS_NAME} = {{...}} literal to rewrite")
    return rewritten.code


def params_changes(old: dict, new: dict) -> dict:
    return {
        "added": {k: new[k] for k in new if k not in old},
        "removed": {k: old[k] for k in old if k not in new},
        "changed": {k: {"old": old[k], "new": new[k]} for k in new if k in old and old[k] != new[k]},
    }


def _safe_params(script: str) -> dict:
    try:
        return read_params(script)
    except (Invalid, SyntaxError):
        return {}


# difflib's line matching costs up to (changed old lines) x (changed new lines); past this many pairs the changed
# region is shown as replaced as a whole instead (two 1M-line scripts would otherwise keep a worker busy for hours).
DIFF_LINE_PAIR_BUDGET = 2_000_000
DIFF_CONTEXT_LINES = 3


def _common_ends(old: list[str], new: list[str]) -> tuple[int, int]:
    """How many lines the two share at the start, and at the end after that."""
    shortest = min(len(old), len(new))
    head = 0
    while head < shortest and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < shortest - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return head, tail


def _unified_range(start: int, stop: int) -> str:
    """A hunk range as unified diffs write it (1-based start, length; an empty range names the line before it)."""
    length = stop - start
    return str(start + 1) if length == 1 else f"{start if length == 0 else start + 1},{length}"


def _whole_region_diff(old: list[str], new: list[str], head: int, tail: int, old_label: str, new_label: str) -> list[str]:
    """One hunk replacing every line between the common start and end, with the usual context around it."""
    start = max(0, head - DIFF_CONTEXT_LINES)
    old_stop = min(len(old), len(old) - tail + DIFF_CONTEXT_LINES)
    new_stop = min(len(new), len(new) - tail + DIFF_CONTEXT_LINES)
    return [
        f"--- {old_label}\n", f"+++ {new_label}\n",
        f"@@ -{_unified_range(start, old_stop)} +{_unified_range(start, new_stop)} @@\n",
        *(" " + line for line in old[start:head]),
        *("-" + line for line in old[head:len(old) - tail]),
        *("+" + line for line in new[head:len(new) - tail]),
        *(" " + line for line in old[len(old) - tail:old_stop]),
    ]


def script_diff(old: str, new: str, old_label: str, new_label: str) -> dict:
    """Unified text diff, PARAMS key-level changes and line stats. `approximate` is true when the changed region
    was too large to match line by line within DIFF_LINE_PAIR_BUDGET and is shown as replaced as a whole."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    head, tail = _common_ends(old_lines, new_lines)
    approximate = (len(old_lines) - head - tail) * (len(new_lines) - head - tail) > DIFF_LINE_PAIR_BUDGET
    if approximate:
        lines = _whole_region_diff(old_lines, new_lines, head, tail, old_label, new_label)
    else:
        lines = list(difflib.unified_diff(old_lines, new_lines, old_label, new_label))
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return {
        "unified": "".join(lines),
        "approximate": approximate,
        "params": params_changes(_safe_params(old), _safe_params(new)),
        "stats": {"added": added, "removed": removed, "oldLines": len(old.splitlines()), "newLines": len(new.splitlines())},
    }
