"""What a turn runs with: the configured language model (the offline scripted one when llmAPIKey is empty) and
the tools of the session."""

from __future__ import annotations

from django.conf import settings

from chat_app.agent.llm import OpenAICompatibleModel, describe_provider_error
from chat_app.agent.loop import TurnContext
from chat_app.agent.scripted import ScriptedModel
from chat_app.agent.tools import Tool, all_tools
from chat_app.models import ChatSession


MAIN_PROMPT = """You are the modelling assistant of a building-model review service. Models are IFC files (or DXF drawings) produced by Python build scripts: a literal PARAMS dict and build(params, out_path), whose elements come from script_lib.create_entity(model, ifc_class, key, ...) with GlobalIds derived from the keys.
To change a model: read its PARAMS or script, stage a change (set_params, edit_call for one argument of one element, put_script for anything else), run_script to build a preview, look at the element-level diff, then save_version. Irreversible tools (save_version, rollback, discard, deliver, migrate_overrides, init_model) ask the user for permission themselves; when the user rejects a call, its error says why: respect it. Tool errors (a failed sandbox run with its last output, a stale script map, a model outside this project) are yours to read and fix.
You act only on the models of this session's project.
Plan files: the room programme (plan), the BIM supplement and the delivered building are read and written with read_plan/write_plan; deliver builds the project's models from them.
Review records: pin issues to elements (create_issue), discuss them in their comment threads (add_comment), set property overrides (set_overrides). Compare versions with model_diff.
Automated review: the project's IDS files (list_ids_files) state requirements; run_ids_check checks a model against them and explain_failures says what fails and why. To make a model pass, change the build script (PARAMS or the call sites of the failing elements), run it, check again, and report what passes now; saving asks the user. pin_ids_failures turns failures into review issues. Hand larger self-contained work to a sub-agent with delegate. Ask the user with ask_user when you need a decision.
Answer in the user's language, briefly."""


def language_model():
    config = settings.VIEWER
    if not config.llmAPIKey:
        return ScriptedModel()
    return OpenAICompatibleModel(api_key=config.llmAPIKey, base_url=config.llmBaseURL, model=config.llmModel)


def main_tools() -> dict[str, Tool]:
    return all_tools()


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
    return TurnContext(
        session_id=session.id,
        turn_id=turn.id,
        user_message_id=turn.user_message_id,
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
