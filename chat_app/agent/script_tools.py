"""Build-script tools: each one is a call of the gateway's own script routes (models_app.script_services), the
same code path as the REST API, so reconversion and the change log follow exactly as they do for people. Mutating
calls are signed "agent on behalf of <user>" (agent/acting.py) with provenance AI. A drawing source in PARAMS must be a drawing of the session's project."""

from __future__ import annotations

from functools import cache

from chat_app import frames
from chat_app.agent.scope import check_drawing_source
from chat_app.agent.tools import ToolCall, ToolError, ToolResult, agent_tool, call_service, json_output
from accounts_app.roles import Capability
from core.provenance import Provenance
from core.script_analysis import AnalysisLimits, AnalysisPool, ScriptAnalysisError
from models_app import script_services
from models_app.models import IfcModel
from models_app.script_services import PROXY_ROUTES

ROUTES = {route.route: route for route in PROXY_ROUTES}
AI = {"source": Provenance.AI.value}
EDIT = Capability.EDIT
NOTE = {"note": {"type": "string"}}
VERSION = {"type": "string", "pattern": "^v[0-9]+$"}
SCALAR = {"type": ["string", "number", "boolean"]}


def edit(call: ToolCall, route: str, method: str, *, query: dict | None = None, body: dict | None = None) -> dict:
    if route == "edit-call":
        return call_service(script_services.script_edit_call, model_id=call.model_id, **body)
    return call_service(script_services.forward, model_id=call.model_id, route=ROUTES[route], method=method, query=query, body=body,
                        signature=call.signature)


def viewer_kind(model_id: str) -> str:
    """What the viewer shows of the model: ifc (XKT) or dxf (render.json)."""
    return IfcModel.objects.filter(pk=model_id).values_list("format", flat=True).first() or "ifc"


def _staged(call: ToolCall, source: str, run: dict) -> frames.Frame:
    return frames.viewer_staged(call.model_id, viewer_kind(call.model_id), source, run.get("semanticDiff"))


def counts(diff: dict | None) -> str:
    if not diff:
        return "no earlier product to compare with"
    return f"elements added {diff['added']}, removed {diff['removed']}, changed {diff['changed']}"


def _params_summary(params: dict) -> str:
    parts = [f"{k}: {v['old']!r} -> {v['new']!r}" for k, v in params.get("changed", {}).items()]
    parts += [f"+{k} = {v!r}" for k, v in params.get("added", {}).items()]
    parts += [f"-{k}" for k in params.get("removed", {})]
    return "; ".join(parts) or "none"


@cache
def _analysis() -> AnalysisPool:
    return AnalysisPool(AnalysisLimits.from_environment(), ("core.script_analysis",))


def _script_params(script: str):
    """The literal PARAMS of a script (None when it has none the way the contract wants it), read in a capped child
    (core.script_analysis): a user's script is never parsed in the gateway process."""
    try:
        _analysis().limits.check_size(script)
        return _analysis().call("core.script_analysis:literal_params", script)
    except ScriptAnalysisError as exc:
        raise ToolError(str(exc.detail)) from None


@agent_tool("get_script", "The build script (staged state, else the last saved version) with line numbers.", takes_model=True)
def get_script(call: ToolCall) -> ToolResult:
    state = edit(call, "script", "GET")
    numbered = "\n".join(f"{n:4d}  {line}" for n, line in enumerate((state.get("script") or "").splitlines(), start=1))
    staged = state.get("source") == "staging"
    header = f"source: {state.get('source')}, saved version: {state.get('version')}, staged: {staged}, ran: {state.get('ran')}\n"
    return ToolResult(header + numbered, title=f"read the build script ({'staged' if staged else 'saved'})", metadata={"modelId": call.model_id, "staged": staged, "version": state.get("version")})


@agent_tool("put_script", "Stage a complete new build script (one staging step; nothing runs).", {"script": {"type": "string"}, **NOTE}, ("script",), takes_model=True, capability=EDIT)
def put_script(call: ToolCall) -> ToolResult:
    check_drawing_source(call.session_id, _script_params(call.arguments["script"]))
    state = edit(call, "script", "PUT", body={"script": call.arguments["script"], "note": call.arguments.get("note", "")})
    diff = edit(call, "script/staging/diff", "GET")
    return ToolResult(json_output({"staging": state["staging"], "diff": diff}), title=f"staged a new script (step {state['staging']['cursor']})",
                      metadata={"modelId": call.model_id, "staging": state["staging"]})


@agent_tool("get_params", "The PARAMS dict of the build script (read without running it).", takes_model=True)
def get_params(call: ToolCall) -> ToolResult:
    params = edit(call, "script/params", "GET")
    return ToolResult(json_output(params), title="read PARAMS", metadata={"modelId": call.model_id, "params": params})


@agent_tool("set_params", "Stage new PARAMS (the whole dict; the rest of the script stays byte-identical).", {"params": {"type": "object"}, **NOTE}, ("params",), takes_model=True, capability=EDIT)
def set_params(call: ToolCall) -> ToolResult:
    check_drawing_source(call.session_id, call.arguments["params"])
    state = edit(call, "script", "PUT", body={"params": call.arguments["params"], "note": call.arguments.get("note", "")})
    diff = edit(call, "script/staging/diff", "GET")
    return ToolResult(f"PARAMS staged ({_params_summary(diff['params'])}); run_script to build it.", title="staged new PARAMS",
                      metadata={"modelId": call.model_id, "staging": state["staging"], "params": diff["params"]})


def _navigation(route: str, verb: str):
    def run(call: ToolCall) -> ToolResult:
        state = edit(call, route, "POST")
        return ToolResult(json_output(state), title=verb, metadata={"modelId": call.model_id, **({"staging": state["staging"]} if "staging" in state else {})})

    return run


agent_tool("undo", "Move the staging cursor one step back.", takes_model=True, capability=EDIT)(_navigation("script/undo", "undid one staging step"))
agent_tool("redo", "Move the staging cursor one step forward.", takes_model=True, capability=EDIT)(_navigation("script/redo", "redid one staging step"))
agent_tool("discard", "Drop all staged changes; back to the last saved version.", takes_model=True, irreversible=True, capability=EDIT)(_navigation("script/discard", "discarded the staging"))


@agent_tool("run_script", "Run the staged script in the sandbox into a preview; ends with the staging diff summary.", takes_model=True, capability=EDIT)
def run_script(call: ToolCall) -> ToolResult:
    run = edit(call, "script/run", "POST")
    diff = edit(call, "script/staging/diff", "GET", query={"from": "0"})
    output = (
        f"Sandbox run succeeded: {run['elements']} elements in {run['seconds']} s. The viewer shows the preview.\n"
        f"Staging diff summary: {counts(run.get('semanticDiff'))}; PARAMS changed: {_params_summary(diff['params'])}; "
        f"script lines +{diff['stats']['added']} -{diff['stats']['removed']}."
    )
    return ToolResult(output, title=f"ran the script: {counts(run.get('semanticDiff'))}", metadata={"modelId": call.model_id, **run},
                      frames=[_staged(call, "run_script", run)])


@agent_tool("save_version", "Save the staged script and its product as a new version (the user is asked for permission).", NOTE, takes_model=True, irreversible=True, capability=EDIT)
def save_version(call: ToolCall) -> ToolResult:
    saved = edit(call, "script/save", "POST", body={"note": call.arguments.get("note", ""), "author": call.signature.author, "provenance": AI})
    summary = {k: saved.get(k) for k in ("version", "semanticDiff", "alignment", "warning") if saved.get(k) is not None}
    return ToolResult(json_output(summary), title=f"saved {saved['version']}", metadata={"modelId": call.model_id, **summary},
                      frames=[frames.viewer_committed(call.model_id, viewer_kind(call.model_id), saved["version"])])


@agent_tool("rollback", "Restore a saved version's script into staging and build it.", {"version": VERSION}, ("version",), takes_model=True, irreversible=True, capability=EDIT)
def rollback(call: ToolCall) -> ToolResult:
    version = call.arguments["version"]
    run = edit(call, "script/rollback", "POST", body={"version": version})
    return ToolResult(f"{version} restored into staging and built: {counts(run.get('semanticDiff'))}. Save it to make it a new version.",
                      title=f"rolled back to {version}", metadata={"modelId": call.model_id, **run}, frames=[_staged(call, "rollback", run)])


@agent_tool("script_diff", "Unified diff, PARAMS changes and stats of two saved versions.", {"base": VERSION, "target": VERSION}, ("base", "target"), takes_model=True)
def script_diff(call: ToolCall) -> ToolResult:
    diff = edit(call, "script/diff", "POST", body={"base": call.arguments["base"], "target": call.arguments["target"]})
    return ToolResult(json_output(diff), title=f"script diff {call.arguments['base']}..{call.arguments['target']}", metadata={"modelId": call.model_id, "stats": diff.get("stats")})


@agent_tool("staging_diff", "Diff between two staging steps (default the last two).", {"from": {"type": "integer", "minimum": 0}, "to": {"type": "integer", "minimum": 0}}, takes_model=True)
def staging_diff(call: ToolCall) -> ToolResult:
    query = {k: str(call.arguments[k]) for k in ("from", "to") if k in call.arguments}
    diff = edit(call, "script/staging/diff", "GET", query=query or None)
    return ToolResult(json_output(diff), title="staging diff", metadata={"modelId": call.model_id, "params": diff.get("params")})


@agent_tool("model_diff", "Element-level semantic diff of two versions (target may be 'current').",
            {"base": VERSION, "target": {"type": "string", "pattern": "^(v[0-9]+|current)$"}}, ("base", "target"), takes_model=True)
def model_diff(call: ToolCall) -> ToolResult:
    base, target = call.arguments["base"], call.arguments["target"]
    diff = edit(call, "edit/diff", "POST", body={"base": base, "target": target})
    totals = {k: len(diff[k]) for k in ("added", "removed", "changed")}
    shown = {k: diff[k][:50] for k in ("added", "removed", "changed")}
    return ToolResult(json_output({"counts": totals, **shown}), title=f"compared {base} with {target}: {counts(totals)}",
                      metadata={"modelId": call.model_id, "base": base, "target": target, "counts": totals, "changedGuids": [c["guid"] for c in diff["changed"]][:500]})


@agent_tool("locate", "Where an element (GlobalId) is created in the build script.", {"guid": {"type": "string", "minLength": 1}}, ("guid",), takes_model=True)
def locate(call: ToolCall) -> ToolResult:
    site = edit(call, "script/locate", "GET", query={"guid": call.arguments["guid"]})
    title = f"{site.get('designKey')} at line {site.get('line')} ({site.get('origin')})" if site.get("found") else "not created by the script"
    return ToolResult(json_output(site), title=title, metadata={"modelId": call.model_id, **site})


@agent_tool("edit_call", "Rewrite one scalar argument of an element's create_entity call, build it, stage it.",
            {"designKey": {"type": "string", "minLength": 1}, "argument": {"type": "string", "minLength": 1}, "value": SCALAR}, ("designKey", "argument", "value"), takes_model=True, capability=EDIT)
def edit_call(call: ToolCall) -> ToolResult:
    key, argument, value = call.arguments["designKey"], call.arguments["argument"], call.arguments["value"]
    run = edit(call, "edit-call", "POST", body={"design_key": key, "argument": argument, "value": value})
    return ToolResult(f"{key}.{argument} = {value!r} staged and built: {counts(run.get('semanticDiff'))}.", title=f"set {argument} of {key}",
                      metadata={"modelId": call.model_id, **run}, frames=[_staged(call, "edit_call", run)])


@agent_tool("list_versions", "The saved versions and their scripts.", takes_model=True)
def list_versions(call: ToolCall) -> ToolResult:
    versions = edit(call, "edit/versions", "GET")
    scripts = edit(call, "scripts", "GET")
    return ToolResult(json_output({**versions, "scripts": scripts}), title=f"{len(versions['versions'])} version(s), current {versions['current']}",
                      metadata={"modelId": call.model_id, **versions})

