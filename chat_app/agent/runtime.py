"""What a turn runs with: the configured language model (the offline scripted one when llmAPIKey is empty) and
the tools of the session."""

from __future__ import annotations

from django.conf import settings

from chat_app.agent.plan_tools import PLAN_TOOLS
from chat_app.agent.llm import OpenAICompatibleModel, describe_provider_error
from chat_app.agent.loop import TurnContext
from chat_app.agent.scripted import ScriptedModel
from chat_app.agent.element_tools import ELEMENT_TOOLS
from chat_app.agent.review_tools import REVIEW_TOOLS
from chat_app.agent.script_tools import SCRIPT_TOOLS
from chat_app.agent.session_tools import INIT_MODEL, SESSION_INFO
from chat_app.agent.subagents import DELEGATE
from chat_app.agent.tools import ASK_USER, Tool
from chat_app.models import ChatSession, Message


MAIN_PROMPT = """You are the modelling assistant of a building-model review service. Models are IFC files produced by Python build scripts: a literal PARAMS dict and build(params, out_path), whose elements come from script_lib.create_entity(model, ifc_class, key, ...) with GlobalIds derived from the keys.
To change a model: read its PARAMS or script, stage a change (set_params, edit_call for one argument of one element, put_script for anything else), run_script to build a preview, look at the element-level diff, then ask the user with ask_user before save_version. Never save without a yes. Tool errors (a failed sandbox run with its last output, a stale script map) are yours to read and fix.
Plan files: the room programme (plan), the BIM supplement and the delivered building are read and written with read_plan/write_plan; deliver builds the model from them (ask the user first).
Review records: pin issues to elements (create_issue), set property overrides (set_overrides). Compare versions with model_diff. Hand larger self-contained work to a sub-agent with delegate.
Answer in the user's language, briefly."""


def language_model():
    config = settings.VIEWER
    if not config.llmAPIKey:
        return ScriptedModel()
    return OpenAICompatibleModel(api_key=config.llmAPIKey, base_url=config.llmBaseURL, model=config.llmModel)


def main_tools() -> dict[str, Tool]:
    return {tool.name: tool for tool in (SESSION_INFO, INIT_MODEL, ASK_USER, DELEGATE, *SCRIPT_TOOLS, *ELEMENT_TOOLS, *REVIEW_TOOLS, *PLAN_TOOLS)}


def context_note(session: ChatSession) -> str:
    project = f"Project {session.project.title!r} (kind {session.project.kind}, id {session.project_id})." if session.project else "No project."
    model = f"The session's model is {session.model_id}." if session.model_id else "No model is bound to the session yet."
    if session.project and session.project.kind != "ifc":
        model += (" In this project models are created with init_model: the drawing is a dxf_lib build script (its keys are"
                  " the element ids), and in a cad->ifc project a second init_model creates the IFC model from the drawing.")
    return f"{project} {model}"


def turn_context(session_id: str, work) -> TurnContext:
    session = ChatSession.objects.select_related("project").get(pk=session_id)
    if work.message is not None:
        user_message_id = work.message.id
    else:
        user_message_id = session.messages.filter(role=Message.Role.USER).exclude(state=Message.State.QUEUED).order_by("-id").values_list("id", flat=True).first()
    note = context_note(session)
    return TurnContext(
        session_id=session_id,
        user_message_id=user_message_id or "",
        llm=language_model(),
        tools=main_tools(),
        model_id=session.model_id,
        project_id=session.project_id,
        project_kind=session.project.kind if session.project else None,
        system_prompt=f"{MAIN_PROMPT}\n\n{note}",
        context_note=note,
    )


def describe_error(exc: Exception) -> dict:
    """An exception as the assistant-error form of the frames: {name, data: {message, ...}}."""
    return describe_provider_error(exc) or {"name": "UnknownError", "data": {"message": f"{type(exc).__name__}: {exc}"[:1000]}}
