"""What a turn runs with: the configured language model (the offline scripted one when llmAPIKey is empty) and
the tools of the session (the offline one also gets the demonstration's own tool, offline_demo.py)."""

from __future__ import annotations

from django.conf import settings

from chat_app.agent.acting import acting_user_of, signature_for
from chat_app.agent.offline_demo import offline_tools
from chat_app.agent.loop import TurnContext
from chat_app.agent.prompts import prompt
from chat_app.agent.registry import all_tools
from chat_app.agent.scripted import ScriptedModel
from chat_app.agent.tools import Tool
from chat_app.models import ChatSession
from chat_app.selectors import language_model_configured


def language_model():
    if not language_model_configured():
        return ScriptedModel()
    from chat_app.agent.llm import OpenAICompatibleModel  # the OpenAI client (~0.4 s to import) only with a model configured

    config = settings.VIEWER
    return OpenAICompatibleModel(api_key=config.llmAPIKey, base_url=config.llmBaseURL, model=config.llmModel)


def main_tools(*, offline: bool = False) -> dict[str, Tool]:
    return {**all_tools(), **offline_tools()} if offline else all_tools()


def context_note(session: ChatSession) -> str:
    project = f"Project {session.project.title!r} (kind {session.project.kind}, id {session.project_id})." if session.project else "No project."
    model = f"The session's model is {session.model_id}." if session.model_id else "No model is bound to the session yet."
    if session.project and session.project.kind != "ifc":
        model += (" In this project models are created with init_model: the drawing is a dxf_lib build script (its keys are"
                  " the element ids), and in a cad->ifc project a second init_model creates the IFC model from the drawing.")
    return f"{project} {model}"


def turn_context(turn) -> TurnContext:
    session = ChatSession.objects.select_related("project").get(pk=turn.session_id)
    note = context_note(session)
    llm = language_model()
    acting_user = acting_user_of(turn)
    return TurnContext(
        session_id=session.id,
        turn_id=turn.id,
        user_message_id=turn.user_message_id,
        llm=llm,
        tools=main_tools(offline=isinstance(llm, ScriptedModel)),
        model_id=session.model_id,
        project_id=session.project_id,
        project_kind=session.project.kind if session.project else None,
        system_prompt=f"{prompt('main')}\n\n{note}",
        context_note=note,
        acting_user=acting_user,
        signature=signature_for(acting_user),
    )


def describe_error(exc: Exception) -> dict:
    """An exception as the assistant-error form of the frames: {name, data: {message, ...}}."""
    described = None
    if language_model_configured():  # else no provider's client ran, nor could it have raised
        from chat_app.agent.llm import describe_provider_error

        described = describe_provider_error(exc)
    return described or {"name": "UnknownError", "data": {"message": f"{type(exc).__name__}: {exc}"[:1000]}}
