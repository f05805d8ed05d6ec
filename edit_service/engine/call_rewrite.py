"""Rewrites one scalar keyword argument of one create_entity call site, keeping the rest of the file byte-identical.

A literal argument is replaced by the new literal; an argument that reads PARAMS["key"] / params["key"] is left alone
and that PARAMS entry is rewritten instead; anything computed is refused.
"""

from __future__ import annotations

import ast

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from edit_service.engine.errors import Invalid
from edit_service.engine.script_map import FACTORY, factory_calls, params_key
from edit_service.engine.scripts import python_literal, read_params, rewrite_params

SCALARS = (str, int, float, bool)
STRUCTURAL_ARGUMENTS = {"storey", "psets", "quantities"}


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, SCALARS)
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float))


class _ArgumentReplacer(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line: int, char_col: int, argument: str, replacement: str):
        self.line, self.char_col, self.argument = line, char_col, argument
        self.replacement = cst.parse_expression(replacement)
        self.replaced = False

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        position = self.get_metadata(PositionProvider, original).start
        if (position.line, position.column) != (self.line, self.char_col):
            return updated
        args = []
        for arg in updated.args:
            if arg.keyword is not None and arg.keyword.value == self.argument:
                arg = arg.with_changes(value=self.replacement)
                self.replaced = True
            args.append(arg)
        return updated.with_changes(args=args)


def rewrite_call_argument(script: str, line: int, col: int, argument: str, value) -> str:
    """The script with `argument=value` at the create_entity call starting at (line, col) (col in UTF-8 bytes, as
    the script map records it). Raises Invalid for unknown/computed/structural arguments and non-scalar values."""
    if not isinstance(value, SCALARS):
        raise Invalid(f"value must be a scalar (string, number or boolean), got {type(value).__name__}")
    if argument in STRUCTURAL_ARGUMENTS:
        raise Invalid(f"argument {argument!r} is structural, not a scalar that edit-call can rewrite")
    call = factory_calls(script).get((line, col))
    if call is None:
        raise Invalid(f"no {FACTORY} call at line {line}, column {col} of the staged script")
    keyword = next((k for k in call[0].keywords if k.arg == argument), None)
    if keyword is None:
        names = ", ".join(k.arg for k in call[0].keywords if k.arg and k.arg not in STRUCTURAL_ARGUMENTS)
        raise Invalid(f"the call at line {line} has no argument {argument!r} (editable: {names})")
    reference = params_key(keyword.value)
    if reference is not None:
        return rewrite_params(script, {**read_params(script), reference: value})
    if not _is_literal(keyword.value):
        raise Invalid(f"argument {argument!r} at line {line} is computed ({ast.unparse(keyword.value)}); edit the script instead")
    source_line = script.splitlines()[line - 1]
    char_col = len(source_line.encode("utf-8")[:col].decode("utf-8", "ignore"))
    transformer = _ArgumentReplacer(line, char_col, argument, python_literal(value))
    rewritten = MetadataWrapper(cst.parse_module(script)).visit(transformer)
    if not transformer.replaced:
        raise Invalid(f"the call at line {line} could not be rewritten")
    return rewritten.code
