"""Build-script tools: each one is a call of the gateway's own script routes (models_app.script_services), the
same code path as the REST API, so reconversion and the change log follow exactly as they do for people. Mutating
calls carry author "agent" and provenance AI. An abort while a sandbox run is under way cancels that run on the
edit service (nothing is published, staging stays as it was)."""

from __future__ import annotations

import asyncio

from chat_app.agent.tools import MODEL_ID, Tool, ToolError, ToolResult, bound_model_id, in_thread, json_output, object_schema
from models_app import script_services
from models_app.models import IfcModel
from models_app.script_services import PROXY_ROUTES
from viewer_gateway.envelope import ApiError
from viewer_gateway.provenance import AGENT_AUTHOR, Provenance

ROUTES = {route.route: route for route in PROXY_ROUTES}
AGENT = {"author": AGENT_AUTHOR, "provenance": {"source": Provenance.AI.value}}
RUNS_A_SANDBOX = {"script/run", "script/save", "script/rollback", "edit-call"}


async def edit(ctx, model_id: str, route: str, method: str, *, query: dict | None = None, body: dict | None = None) -> dict:
    def call():
        if route == "edit-call":
            return script_services.script_edit_call(model_id=model_id, **body)
        return script_services.forward(model_id=model_id, route=ROUTES[route], method=method, query=query, body=body)

    try:
        return await in_thread(call)()
    except ApiError as exc:
        raise ToolError(str(exc.detail)) from None
    except asyncio.CancelledError:
        if route in RUNS_A_SANDBOX:
            await asyncio.shield(in_thread(script_services.script_cancel_runs)(model_id=model_id))
        raise


async def _viewer_kind(model_id: str) -> str:
    """What the viewer shows of the model: ifc (XKT) or dxf (render.json)."""
    return await in_thread(lambda: IfcModel.objects.filter(pk=model_id).values_list("format", flat=True).first() or "ifc")()


async def _staged(ctx, model_id: str, source: str, run: dict) -> tuple[str, dict]:
    return "viewer.staged", {"modelId": model_id, "kind": await _viewer_kind(model_id), "source": source, "semanticDiff": run.get("semanticDiff")}


def _counts(diff: dict | None) -> str:
    if not diff:
        return "no earlier product to compare with"
    return f"elements added {diff['added']}, removed {diff['removed']}, changed {diff['changed']}"


def _params_summary(params: dict) -> str:
    parts = [f"{k}: {v['old']!r} -> {v['new']!r}" for k, v in params.get("changed", {}).items()]
    parts += [f"+{k} = {v!r}" for k, v in params.get("added", {}).items()]
    parts += [f"-{k}" for k in params.get("removed", {})]
    return "; ".join(parts) or "none"


async def _get_script(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    state = await edit(ctx, model_id, "script", "GET")
    numbered = "\n".join(f"{n:4d}  {line}" for n, line in enumerate((state.get("script") or "").splitlines(), start=1))
    staged = state.get("source") == "staging"
    header = f"source: {state.get('source')}, saved version: {state.get('version')}, staged: {staged}, ran: {state.get('ran')}\n"
    return ToolResult(header + numbered, title=f"read the build script ({'staged' if staged else 'saved'})", metadata={"modelId": model_id, "staged": staged, "version": state.get("version")})


async def _put_script(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    state = await edit(ctx, model_id, "script", "PUT", body={"script": arguments["script"], "note": arguments.get("note", "")})
    diff = await edit(ctx, model_id, "script/staging/diff", "GET")
    return ToolResult(
        json_output({"staging": state["staging"], "diff": diff}),
        title=f"staged a new script (step {state['staging']['cursor']})", metadata={"modelId": model_id, "staging": state["staging"]},
    )


async def _get_params(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    params = await edit(ctx, model_id, "script/params", "GET")
    return ToolResult(json_output(params), title="read PARAMS", metadata={"modelId": model_id, "params": params})


async def _set_params(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    state = await edit(ctx, model_id, "script", "PUT", body={"params": arguments["params"], "note": arguments.get("note", "")})
    diff = await edit(ctx, model_id, "script/staging/diff", "GET")
    return ToolResult(
        f"PARAMS staged ({_params_summary(diff['params'])}); run_script to build it.",
        title="staged new PARAMS", metadata={"modelId": model_id, "staging": state["staging"], "params": diff["params"]},
    )


def _navigation(route: str, verb: str):
    async def run(ctx, arguments: dict) -> ToolResult:
        model_id = bound_model_id(ctx, arguments)
        state = await edit(ctx, model_id, route, "POST")
        return ToolResult(json_output(state), title=verb, metadata={"modelId": model_id, **({"staging": state["staging"]} if "staging" in state else {})})

    return run


async def _run_script(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    run = await edit(ctx, model_id, "script/run", "POST")
    diff = await edit(ctx, model_id, "script/staging/diff", "GET", query={"from": "0"})
    output = (
        f"Sandbox run succeeded: {run['elements']} elements in {run['seconds']} s. The viewer shows the preview.\n"
        f"Staging diff summary: {_counts(run.get('semanticDiff'))}; PARAMS changed: {_params_summary(diff['params'])}; "
        f"script lines +{diff['stats']['added']} -{diff['stats']['removed']}."
    )
    return ToolResult(output, title=f"ran the script: {_counts(run.get('semanticDiff'))}", metadata={"modelId": model_id, **run},
                      frames=[await _staged(ctx, model_id, "run_script", run)])


async def _save_version(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    saved = await edit(ctx, model_id, "script/save", "POST", body={"note": arguments.get("note", ""), **AGENT})
    summary = {k: saved.get(k) for k in ("version", "semanticDiff", "alignment", "warning") if saved.get(k) is not None}
    return ToolResult(json_output(summary), title=f"saved {saved['version']}", metadata={"modelId": model_id, **summary},
                      frames=[("viewer.committed", {"modelId": model_id, "kind": await _viewer_kind(model_id), "version": saved["version"]})])


async def _rollback(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    run = await edit(ctx, model_id, "script/rollback", "POST", body={"version": arguments["version"]})
    return ToolResult(f"{arguments['version']} restored into staging and built: {_counts(run.get('semanticDiff'))}. Save it to make it a new version.",
                      title=f"rolled back to {arguments['version']}", metadata={"modelId": model_id, **run},
                      frames=[await _staged(ctx, model_id, "rollback", run)])


async def _script_diff(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    diff = await edit(ctx, model_id, "script/diff", "POST", body={"base": arguments["base"], "target": arguments["target"]})
    return ToolResult(json_output(diff), title=f"script diff {arguments['base']}..{arguments['target']}", metadata={"modelId": model_id, "stats": diff.get("stats")})


async def _staging_diff(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    query = {k: str(arguments[k]) for k in ("from", "to") if k in arguments}
    diff = await edit(ctx, model_id, "script/staging/diff", "GET", query=query or None)
    return ToolResult(json_output(diff), title="staging diff", metadata={"modelId": model_id, "params": diff.get("params")})


async def _model_diff(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    diff = await edit(ctx, model_id, "edit/diff", "POST", body={"base": arguments["base"], "target": arguments["target"]})
    counts = {k: len(diff[k]) for k in ("added", "removed", "changed")}
    shown = {k: diff[k][:50] for k in ("added", "removed", "changed")}
    return ToolResult(json_output({"counts": counts, **shown}), title=f"compared {arguments['base']} with {arguments['target']}: {_counts(counts)}",
                      metadata={"modelId": model_id, "base": arguments["base"], "target": arguments["target"], "counts": counts,
                                "changedGuids": [c["guid"] for c in diff["changed"]][:500]})


async def _locate(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    site = await edit(ctx, model_id, "script/locate", "GET", query={"guid": arguments["guid"]})
    title = f"{site.get('designKey')} at line {site.get('line')} ({site.get('origin')})" if site.get("found") else "not created by the script"
    return ToolResult(json_output(site), title=title, metadata={"modelId": model_id, **site})


async def _edit_call(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    body = {"design_key": arguments["designKey"], "argument": arguments["argument"], "value": arguments["value"]}
    run = await edit(ctx, model_id, "edit-call", "POST", body=body)
    return ToolResult(f"{arguments['designKey']}.{arguments['argument']} = {arguments['value']!r} staged and built: {_counts(run.get('semanticDiff'))}.",
                      title=f"set {arguments['argument']} of {arguments['designKey']}", metadata={"modelId": model_id, **run},
                      frames=[await _staged(ctx, model_id, "edit_call", run)])


async def _list_versions(ctx, arguments: dict) -> ToolResult:
    model_id = bound_model_id(ctx, arguments)
    versions = await edit(ctx, model_id, "edit/versions", "GET")
    scripts = await edit(ctx, model_id, "scripts", "GET")
    return ToolResult(json_output({**versions, "scripts": scripts}), title=f"{len(versions['versions'])} version(s), current {versions['current']}",
                      metadata={"modelId": model_id, **versions})


def _tool(name: str, description: str, run, properties: dict | None = None, required: tuple[str, ...] = ()) -> Tool:
    return Tool(name=name, description=description, parameters=object_schema({**MODEL_ID, **(properties or {})}, required), run=run)


NOTE = {"note": {"type": "string"}}
VERSION = {"type": "string", "pattern": "^v[0-9]+$"}
SCALAR = {"type": ["string", "number", "boolean"]}

SCRIPT_TOOLS = [
    _tool("get_script", "The build script (staged state, else the last saved version) with line numbers.", _get_script),
    _tool("put_script", "Stage a complete new build script (one staging step; nothing runs).", _put_script, {"script": {"type": "string"}, **NOTE}, ("script",)),
    _tool("get_params", "The PARAMS dict of the build script (read without running it).", _get_params),
    _tool("set_params", "Stage new PARAMS (the whole dict; the rest of the script stays byte-identical).", _set_params, {"params": {"type": "object"}, **NOTE}, ("params",)),
    _tool("undo", "Move the staging cursor one step back.", _navigation("script/undo", "undid one staging step")),
    _tool("redo", "Move the staging cursor one step forward.", _navigation("script/redo", "redid one staging step")),
    _tool("discard", "Drop all staged changes; back to the last saved version.", _navigation("script/discard", "discarded the staging")),
    _tool("run_script", "Run the staged script in the sandbox into a preview; ends with the staging diff summary.", _run_script),
    _tool("save_version", "Save the staged script and its product as a new version (ask the user first).", _save_version, NOTE),
    _tool("rollback", "Restore a saved version's script into staging and build it.", _rollback, {"version": VERSION}, ("version",)),
    _tool("script_diff", "Unified diff, PARAMS changes and stats of two saved versions.", _script_diff, {"base": VERSION, "target": VERSION}, ("base", "target")),
    _tool("staging_diff", "Diff between two staging steps (default the last two).", _staging_diff, {"from": {"type": "integer", "minimum": 0}, "to": {"type": "integer", "minimum": 0}}),
    _tool("model_diff", "Element-level semantic diff of two versions (target may be 'current').", _model_diff, {"base": VERSION, "target": {"type": "string", "pattern": "^(v[0-9]+|current)$"}}, ("base", "target")),
    _tool("locate", "Where an element (GlobalId) is created in the build script.", _locate, {"guid": {"type": "string", "minLength": 1}}, ("guid",)),
    _tool("edit_call", "Rewrite one scalar argument of an element's create_entity call, build it, stage it.", _edit_call,
          {"designKey": {"type": "string", "minLength": 1}, "argument": {"type": "string", "minLength": 1}, "value": SCALAR}, ("designKey", "argument", "value")),
    _tool("list_versions", "The saved versions and their scripts.", _list_versions),
]
