"""What a session's agent may act on: the models of the session's project (a session without a project: its own
model only), and, as a build script's drawing source, only a drawing of that project. Checked at the tool boundary
for every call, whatever the model asked for; text the agent read (issue titles, BCF comments, IFC names, plan
files) cannot steer it elsewhere."""

from __future__ import annotations

from chat_app.agent.tools import ToolError
from chat_app.models import ChatSession
from models_app.models import IfcModel
from models_app.selectors import project_model_ids


def checked_model(session_id: str, requested: str | None, bound: str | None) -> str:
    """The model a call acts on (the requested one, else the session's), when the session may act on it."""
    model_id = requested or bound
    if not model_id:
        raise ToolError("no model is bound to this session and no modelId was given (see session_info)")
    session = ChatSession.objects.only("project_id", "model_id").get(pk=session_id)
    if session.project_id:
        allowed = project_model_ids(session.project_id)
        if model_id not in allowed:
            raise ToolError(f"model {model_id} is not a model of this session's project; its models are: {', '.join(allowed) or 'none yet'}")
    elif model_id != session.model_id:
        raise ToolError(f"model {model_id} is not this session's model ({session.model_id or 'none'}); a session acts on its own model only")
    return model_id


def check_drawing_source(session_id: str, params) -> None:
    """PARAMS "source" of a build script ({"model": ..., "version": ...}) must name a drawing of the session's
    project."""
    source = params.get("source") if isinstance(params, dict) else None
    if not isinstance(source, dict) or "model" not in source:
        return
    model_id = source.get("model")
    project_id = ChatSession.objects.filter(pk=session_id).values_list("project_id", flat=True).first()
    drawings = set(IfcModel.objects.filter(project_link__project_id=project_id, format=IfcModel.Format.DXF).values_list("id", flat=True)) if project_id else set()
    if model_id not in drawings:
        raise ToolError(f'PARAMS "source" names {model_id!r}, which is not a drawing of this session\'s project'
                        f"{' (its drawings: ' + ', '.join(sorted(drawings)) + ')' if drawings else ''}")
