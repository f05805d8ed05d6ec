"""The script map: designKey -> call site {line, col, snippet, origin} of the create_entity call that made it.

Line and column are recorded by script_lib while the script runs in the sandbox; the origin comes from the syntax
of that call:
- traced: the key is not a string literal, the call sits in a loop or comprehension, or one call site made several
  elements at run time (e.g. a helper called in a loop) - such a call cannot be rewritten for one element;
- params: the key is literal and some keyword argument reads PARAMS / params["..."];
- literal: the key and the keyword arguments are literals (or other expressions that edit-call will refuse).
Published as {scriptHash, map}; trusted only while scriptHash equals the hash of the staged script.
"""

from __future__ import annotations

import ast

from edit_service.engine.scripts import PARAMS_NAME, parse, script_hash

FACTORY = "create_entity"
PARAMS_READERS = {PARAMS_NAME, "params"}
LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _is_factory_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == FACTORY) or (isinstance(func, ast.Attribute) and func.attr == FACTORY)


def params_key(node: ast.AST) -> str | None:
    """'x' for PARAMS["x"] / params["x"], else None."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id in PARAMS_READERS
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.slice.value
    return None


def key_argument(call: ast.Call) -> ast.AST | None:
    keyword = next((k.value for k in call.keywords if k.arg == "key"), None)
    if keyword is not None:
        return keyword
    return call.args[2] if len(call.args) >= 3 else None


def factory_calls(script: str) -> dict[tuple[int, int], tuple[ast.Call, bool]]:
    """(line, col) -> (call node, inside a loop) for every create_entity call of the script."""
    found: dict[tuple[int, int], tuple[ast.Call, bool]] = {}

    def visit(node: ast.AST, in_loop: bool) -> None:
        if _is_factory_call(node):
            found[(node.lineno, node.col_offset)] = (node, in_loop)
        for child in ast.iter_child_nodes(node):
            visit(child, in_loop or isinstance(node, LOOPS))

    visit(parse(script), False)  # under the lock, see scripts.AST_LOCK
    return found


def _origin(call: ast.Call, in_loop: bool, repeated: bool, design_key: str) -> str:
    key = key_argument(call)
    # the recorded call site comes from the script's own process, which could point it elsewhere: only a call
    # whose literal key is this design key is trusted as the element's call site
    if repeated or in_loop or not (isinstance(key, ast.Constant) and key.value == design_key):
        return "traced"
    if any(params_key(k.value) is not None for k in call.keywords):
        return "params"
    return "literal"


def build_map(script: str, recorded: dict[str, dict]) -> dict:
    """The published map envelope from the sandbox's recorded call sites."""
    calls = factory_calls(script)
    lines = script.splitlines()
    entries = {}
    for design_key, site in recorded.items():
        line, col = site.get("line"), site.get("col")
        call = calls.get((line, col)) if isinstance(line, int) and isinstance(col, int) else None
        origin = "traced" if call is None else _origin(call[0], call[1], bool(site.get("repeated", False)), design_key)
        located = isinstance(line, int) and isinstance(col, int) and 0 < line <= len(lines)
        entries[str(design_key)] = {
            "line": line if located else None, "col": col if located else None,
            "snippet": lines[line - 1].strip() if located else "", "origin": origin,
        }
    return {"scriptHash": script_hash(script), "map": entries}
