"""The offline demonstration's own tool (scripted.py): a copy of the session's model for it to work on, so the
demonstration never touches the model itself. It is handed to the offline model only (runtime.turn_context), never
declared in the registry a language model gets its tools from."""

from __future__ import annotations

from pathlib import PurePath

from chat_app import frames, services
from chat_app.agent.script_tools import edit
from chat_app.agent.tools import MODEL_ID, Tool, ToolCall, ToolError, ToolResult, call_service, json_output, object_schema
from accounts_app.roles import Capability
from core.provenance import Provenance
from models_app.models import Project
from models_app.project_services import project_model_create
from models_app.selectors import model_get


def demo_copy(call: ToolCall) -> ToolResult:
    """A new model of the session's ifc project, built from the current script of the session's model (staged,
    else saved) and saved as its v1; the model itself is only read."""
    project = services.session_get(call.session_id).project
    if project is None or project.kind != Project.Kind.IFC:
        raise ToolError("the demonstration copies a model of an ifc project, and this session belongs to none")
    source = call_service(model_get, call.model_id)
    script = edit(call, "script", "GET").get("script")
    if not script:
        raise ToolError(f"the model {source.id} has no build script to copy")
    model, saved = call_service(project_model_create, project=project, name=f"{PurePath(source.name).stem} (demo copy).ifc", script=script,
                                note=f"offline demo: a copy of {source.id}", author=call.signature.author, provenance=Provenance.AI.value)
    created = frames.model_created(model.id, model.format, model.name, project.id)
    return ToolResult(
        json_output({**created[1], "copyOf": source.id, "version": saved.get("version")}),
        title=f"copied {source.name} into {model.name} ({saved.get('version')})",
        metadata={"modelId": model.id, "copyOf": source.id, "version": saved.get("version")},
        frames=[created],
    )


DEMO_COPY = Tool(
    name="demo_copy",
    description="Offline demonstration only: copy the session's model into a new model of the project to work on (the user is asked for permission).",
    parameters=object_schema(MODEL_ID),
    run=demo_copy,
    irreversible=True,
    takes_model=True,
    capability=Capability.EDIT,
)


def offline_tools() -> dict[str, Tool]:
    return {DEMO_COPY.name: DEMO_COPY}
