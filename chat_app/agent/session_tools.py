"""Tools about the chat session itself."""

from __future__ import annotations

from chat_app import selectors, services
from chat_app.agent.tools import Tool, ToolError, ToolResult, in_thread, json_output, object_schema
from viewer_gateway.envelope import ApiError


async def _session_info(ctx, arguments: dict) -> ToolResult:
    info = await in_thread(selectors.session_overview)(ctx.session_id)
    model = info.get("model")
    title = f"{info['project']['title']} ({info['project']['kind']})" if info.get("project") else "session without a project"
    if model:
        title += f", model {model['name']} {model['status']}"
    return ToolResult(json_output(info), title=title, metadata=info)


SESSION_INFO = Tool(
    name="session_info",
    description="The session's project (id, title, kind), its bound model (id, name, conversion status) and the project's models.",
    parameters=object_schema(),
    run=_session_info,
)


async def _init_model(ctx, arguments: dict) -> ToolResult:
    try:
        model, saved = await in_thread(services.model_init)(session_id=ctx.session_id, title=arguments.get("title", ""), script=arguments.get("script"))
    except ApiError as exc:
        raise ToolError(str(exc.detail)) from None
    ctx.model_id = model.id
    project_id = await in_thread(lambda: model.project_link.project_id)()
    created = {"modelId": model.id, "kind": model.format, "title": model.name, "projectId": project_id}
    return ToolResult(
        json_output({**created, "version": saved.get("version")}),
        title=f"created the {'drawing' if model.format == 'dxf' else 'IFC model'} {model.name} ({saved.get('version')})",
        metadata={"modelId": model.id, "version": saved.get("version")},
        frames=[("model.created", created)],
    )


INIT_MODEL = Tool(
    name="init_model",
    description=(
        "cad and cad->ifc projects only: create the project's model from a build script (default: a skeleton) and bind it "
        "to the session. In a cad project it is the drawing (a dxf_lib script); in a cad->ifc project the first call "
        "creates the drawing, the second the IFC model whose script reads the drawing's latest saved version."
    ),
    parameters=object_schema({"title": {"type": "string", "maxLength": 200}, "script": {"type": "string", "minLength": 1}}),
    run=_init_model,
)
