"""Tools about the chat session itself: what it is about, and the model of a cad or cad->ifc project."""

from __future__ import annotations

from chat_app import frames, selectors, services
from chat_app.agent.tools import ToolCall, ToolError, ToolResult, agent_tool, call_service, json_output
from accounts_app.roles import Capability
from core.provenance import Provenance
from models_app.project_services import project_model_init


@agent_tool("session_info", "The session's project (id, title, kind), its bound model (id, name, conversion status) and the project's models.")
def session_info(call: ToolCall) -> ToolResult:
    info = selectors.session_overview(call.session_id)
    model = info.get("model")
    title = f"{info['project']['title']} ({info['project']['kind']})" if info.get("project") else "session without a project"
    if model:
        title += f", model {model['name']} {model['status']}"
    return ToolResult(json_output(info), title=title, metadata=info)


@agent_tool("init_model", (
    "cad and cad->ifc projects only: create the project's model from a build script (default: a skeleton) and bind it "
    "to the session (the user is asked for permission). In a cad project it is the drawing (a dxf_lib script); in a "
    "cad->ifc project the first call creates the drawing, the second the IFC model whose script reads the drawing's "
    "latest saved version."
), {"title": {"type": "string", "maxLength": 200}, "script": {"type": "string", "minLength": 1}}, irreversible=True, capability=Capability.EDIT)
def init_model(call: ToolCall) -> ToolResult:
    session = services.session_get(call.session_id)
    if session.project is None:
        raise ToolError("init_model is for cad and cad->ifc projects, and this session belongs to no project")
    model, saved = call_service(project_model_init, project=session.project, title=call.arguments.get("title", ""), script=call.arguments.get("script"),
                                author=call.signature.author, provenance=Provenance.AI.value)
    services.session_bind_model(session.id, model)
    call.ctx.model_id = model.id
    created = frames.model_created(model.id, model.format, model.name, session.project_id)
    return ToolResult(
        json_output({**created[1], "version": saved.get("version")}),
        title=f"created the {'drawing' if model.format == 'dxf' else 'IFC model'} {model.name} ({saved.get('version')})",
        metadata={"modelId": model.id, "version": saved.get("version")},
        frames=[created],
    )
