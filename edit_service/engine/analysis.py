"""The edit service's script analysis (contract check, PARAMS read and rewrite, call-site rewrite, script map, script
diff): the functions of scripts.py, call_rewrite.py and script_map.py, each run in a capped child of
core.script_analysis, never in this process. A script entering the service (staged, rewritten, built) is refused
over the size limit before it is parsed. Refusals and rejections are Invalid (422)."""

from __future__ import annotations

from functools import cache

from core.script_analysis import AnalysisLimits, AnalysisPool, ScriptAnalysisError
from edit_service.engine.errors import Invalid

CHILD_MODULES = ("edit_service.engine.scripts", "edit_service.engine.call_rewrite", "edit_service.engine.script_map")


@cache
def pool() -> AnalysisPool:
    return AnalysisPool(AnalysisLimits.from_environment(), CHILD_MODULES)


def _call(function: str, *args, entering: str | None = None):
    try:
        if entering is not None:
            pool().limits.check_size(entering)
        return pool().call(function, *args)
    except ScriptAnalysisError as exc:
        raise Invalid(exc.detail) from None


def check_contract(script: str) -> dict:
    """scripts.check_contract: PARAMS of a script that keeps the contract, else Invalid."""
    if not isinstance(script, str) or not script.strip():
        raise Invalid("the script is empty")
    return _call("edit_service.engine.scripts:check_contract", script, entering=script)


def read_params(script: str) -> dict:
    return _call("edit_service.engine.scripts:read_params", script)


def rewrite_params(script: str, new_params: dict) -> str:
    return _call("edit_service.engine.scripts:rewrite_params", script, new_params, entering=script)


def rewrite_call_argument(script: str, line: int, col: int, argument: str, value) -> str:
    return _call("edit_service.engine.call_rewrite:rewrite_call_argument", script, line, col, argument, value, entering=script)


def build_map(script: str, recorded: dict) -> dict:
    return _call("edit_service.engine.script_map:build_map", script, recorded)


def script_diff(old: str, new: str, old_label: str, new_label: str) -> dict:
    return _call("edit_service.engine.scripts:script_diff", old, new, old_label, new_label)
