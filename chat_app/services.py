"""Use cases of the chat: projects, their session, messages, answers and aborts. Views, admin actions and the agent
call these."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from asgiref.sync import async_to_sync
from django.db import transaction

from chat_app import events, turns
from chat_app.selectors import PROJECT_ID_RE, project_get
from chat_app.agent.loop import close_question
from chat_app.agent.writer import now_ms
from chat_app.models import (
    INTERRUPT_ID_PATTERN,
    SESSION_ID_PATTERN,
    ChatSession,
    Message,
    Part,
    PendingQuestion,
    Project,
    ProjectModel,
    sortable_id,
)
from models_app.models import IfcModel
from models_app.script_services import model_create_from_script
from models_app.storage import latest_saved_product
from models_app.services import model_delete, model_get
from viewer_gateway.envelope import InvalidInput, NotFound
from viewer_gateway.provenance import AGENT_AUTHOR, Provenance

DEFAULT_PROJECT_TITLE = "AI 项目"
SKELETONS = Path(__file__).resolve().parent / "skeletons"
SKELETON_SCRIPT = SKELETONS / "ifc_project.py"
DRAWING_SKELETON = SKELETONS / "cad_drawing.py"
IFC_FROM_DRAWING_SKELETON = SKELETONS / "ifc_from_drawing.py"
SESSION_ID_RE = re.compile(rf"^{SESSION_ID_PATTERN}$")
INTERRUPT_ID_RE = re.compile(rf"^{INTERRUPT_ID_PATTERN}$")
ABORT_WAIT_SECONDS = 2.0


# --- projects ----------------------------------------------------------------------------------------------------


def _skeleton(path: Path, replacements: dict[str, str]) -> str:
    """A skeleton build script with some PARAMS literals replaced (the skeletons are ours, so their text is known)."""
    script = path.read_text(encoding="utf-8")
    for old, new in replacements.items():
        if old not in script:
            raise RuntimeError(f"skeleton {path.name} has no {old!r}")
        script = script.replace(old, new, 1)
    return script


def skeleton_script(title: str) -> str:
    return _skeleton(SKELETON_SCRIPT, {'"name": "New project"': f'"name": {json.dumps(title, ensure_ascii=False)}'})


def project_create(*, title: str, kind: str) -> Project:
    """A new project. Kind ifc gets its skeleton model at once (build script staged, run in the sandbox, saved as
    v1, converted); cad and cad->ifc start blank (the agent's init_model creates their model)."""
    project = Project.objects.create(title=title or DEFAULT_PROJECT_TITLE, kind=kind)
    if kind == Project.Kind.IFC:
        try:
            model, _ = model_create_from_script(name=f"{project.title}.ifc", script=skeleton_script(project.title), note="project skeleton")
        except BaseException:
            project.delete()
            raise
        project_add_model(project, model)
    return project


def project_add_model(project: Project, model: IfcModel) -> None:
    ProjectModel.objects.create(project=project, model=model)


def model_init(*, session_id: str, title: str = "", script: str | None = None, author: str = AGENT_AUTHOR,
               provenance: str = Provenance.AI.value) -> tuple[IfcModel, dict]:
    """Creates the model of a cad or cad->ifc project (the agent's init_model): built from `script` or a skeleton,
    run in the sandbox, saved as v1, added to the project and bound to the session. A cad project gets its drawing;
    a cad->ifc project first its drawing, then its IFC model, whose script reads the drawing's latest saved version
    (pinned in PARAMS "source"). Edit-service failures are 50200 and leave nothing behind."""
    session = session_get(session_id)
    project = session.project
    if project is None or project.kind == Project.Kind.IFC:
        raise InvalidInput("init_model is for cad and cad->ifc projects (an ifc project gets its model when it is created)")
    drawing = project.ifc_models.filter(format=IfcModel.Format.DXF).order_by("project_link__id").first()
    name = title or project.title
    if drawing is None:
        model_format, suffix = IfcModel.Format.DXF, ".dxf"
        script = script or _skeleton(DRAWING_SKELETON, {'"name": "New drawing"': f'"name": {json.dumps(name, ensure_ascii=False)}'})
    elif project.kind == Project.Kind.CAD_TO_IFC and not project.ifc_models.filter(format=IfcModel.Format.IFC).exists():
        model_format, suffix = IfcModel.Format.IFC, ".ifc"
        saved = latest_saved_product(drawing.id, ".dxf")
        if saved is None:
            raise InvalidInput(f"the drawing {drawing.id} has no saved version to build the IFC model from")
        source = {"model": drawing.id, "version": saved.stem}
        script = script or _skeleton(IFC_FROM_DRAWING_SKELETON, {
            '"name": "New building"': f'"name": {json.dumps(name, ensure_ascii=False)}',
            '"source": {"model": "m_0000000000000000", "version": "v1"}': f'"source": {json.dumps(source)}',
        })
    else:
        raise InvalidInput(f"the project already has its model(s): {', '.join(project.ifc_models.values_list('id', flat=True))}")
    model, saved_version = model_create_from_script(name=f"{name}{suffix}", script=script, note="init_model", author=author,
                                                    provenance=provenance, format=model_format)
    project_add_model(project, model)
    session_bind_model(session.id, model)
    return model, saved_version


def project_delete(project_id: str) -> None:
    """The project with everything it owns: its session (event log, messages, questions), its plan files and every
    model of the project with its issues, changes, overrides and files."""
    project = project_get(project_id)
    session = ChatSession.objects.filter(project=project).first()
    if session is not None and session.status == ChatSession.Status.BUSY:
        turn_abort(session.id)
    for model_id in list(project.projectmodel_set.values_list("model_id", flat=True)):
        try:
            model_delete(model_id)
        except NotFound:
            continue
    project.delete()


# --- sessions ----------------------------------------------------------------------------------------------------


def session_get(session_id: str) -> ChatSession:
    if not SESSION_ID_RE.match(session_id or ""):
        raise NotFound(f"chat session {session_id!r} not found (ids look like c_ + 16 lowercase hex digits)")
    try:
        return ChatSession.objects.select_related("project").get(pk=session_id)
    except ChatSession.DoesNotExist:
        raise NotFound(f"chat session {session_id} not found") from None


def session_list():
    return ChatSession.objects.select_related("project").order_by("-created_at")


def _project_model(project: Project) -> IfcModel | None:
    return project.ifc_models.order_by("project_link__id").first()


def session_open(*, title: str = "", project_id: str | None = None, model_id: str | None = None) -> ChatSession:
    """The project's one session (created on first use), or, in the legacy form, the model's one session (the
    project's session for a model of a project; a new session without a model when modelId is empty)."""
    if project_id:
        if not PROJECT_ID_RE.match(project_id) or not Project.objects.filter(pk=project_id).exists():
            raise InvalidInput(f"project {project_id} does not exist")
        with transaction.atomic():
            project = Project.objects.select_for_update().get(pk=project_id)
            session = ChatSession.objects.filter(project=project).first()
            if session is None:
                session = ChatSession.objects.create(project=project, title=title or project.title, model=_project_model(project))
        return session
    if model_id:
        model = model_get(model_id)
        link = ProjectModel.objects.filter(model=model).first()
        if link is not None:  # a project's model talks in the project's one session
            return session_open(title=title, project_id=link.project_id)
        with transaction.atomic():
            IfcModel.objects.select_for_update().filter(pk=model.id).first()
            session = ChatSession.objects.filter(model=model, project__isnull=True).first()
            if session is None:
                session = ChatSession.objects.create(model=model, title=title)
        return session
    return ChatSession.objects.create(title=title)


def session_bind_model(session_id: str, model: IfcModel) -> None:
    ChatSession.objects.filter(pk=session_id).update(model=model)


# --- turns -------------------------------------------------------------------------------------------------------


def message_post(*, session_id: str, text: str) -> dict:
    """Takes a user message; the turn runs asynchronously (results arrive on the event stream). Messages sent
    while a turn runs wait for it (FIFO); one sent while the agent waits for an answer replaces the answer."""
    session = session_get(session_id)
    if not text.strip():
        raise InvalidInput("text must not be empty")
    created = now_ms()
    message_id, part_id = sortable_id("msg_"), sortable_id("prt_")
    info = {"id": message_id, "sessionID": session.id, "role": "user", "time": {"created": created}, "agent": "main"}
    part = {"id": part_id, "sessionID": session.id, "messageID": message_id, "type": "text", "text": text, "time": {"start": created, "end": created}}
    with transaction.atomic():
        message = Message.objects.create(id=message_id, session=session, role=Message.Role.USER, state=Message.State.QUEUED, info=info)
        Part.objects.create(id=part_id, message=message, type="text", data=part)
    turns.wake(session.id)
    return {"accepted": True}


def messages_list(session_id: str) -> list[dict]:
    """[{info, parts}] of every processed message, sub-agents' included, in order."""
    session = session_get(session_id)
    messages = session.messages.exclude(state=Message.State.QUEUED).prefetch_related("parts").order_by("id")
    return [{"info": message.info, "parts": [part.data for part in message.parts.all()]} for message in messages]


def question_answer(*, session_id: str, interrupt_id: str, answer: str) -> dict:
    """Resumes the turn waiting on the question. Repeating the same answer is accepted again; another answer to a
    question already answered, or an unknown or closed question, is 404."""
    session = session_get(session_id)
    if not INTERRUPT_ID_RE.match(interrupt_id or ""):
        raise NotFound(f"question {interrupt_id!r} not found (ids look like que_ + 12 lowercase hex digits)")
    with transaction.atomic():
        question = PendingQuestion.objects.select_for_update().filter(pk=interrupt_id, session=session).first()
        if question is None:
            raise NotFound(f"question {interrupt_id} not found in session {session.id}")
        if question.state in (PendingQuestion.State.ANSWERED, PendingQuestion.State.CLOSED) and question.answer == answer:
            return {"accepted": True}
        if question.state != PendingQuestion.State.PENDING:
            raise NotFound(f"question {interrupt_id} is no longer waiting for an answer ({question.state})")
        question.state, question.answer = PendingQuestion.State.ANSWERED, answer
        question.save(update_fields=["state", "answer"])
    turns.wake(session.id)
    return {"accepted": True}


def turn_abort(session_id: str) -> dict:
    """Stops the session's turn within a second: its running step and tools, pending questions and queued
    messages. {aborted: false} when nothing was running."""
    session = session_get(session_id)
    if session.status == ChatSession.Status.IDLE:
        return {"aborted": False}
    ChatSession.objects.filter(pk=session.id).update(abort_requested=True)
    if turns.claim(session.id) is turns.Claim.TAKEN:
        # nobody was working on it (a turn waiting for an answer, or a dead runner): end it here
        _abort_waiting_turn(session.id)
        return {"aborted": True}
    deadline = time.monotonic() + ABORT_WAIT_SECONDS
    while time.monotonic() < deadline and ChatSession.objects.filter(pk=session.id, status=ChatSession.Status.BUSY, runner__gt="").exists():
        time.sleep(0.05)
    return {"aborted": True}


def _abort_waiting_turn(session_id: str) -> None:
    was_busy = ChatSession.objects.filter(pk=session_id, status=ChatSession.Status.BUSY).exists()
    for question in PendingQuestion.objects.filter(session_id=session_id, state__in=[PendingQuestion.State.PENDING, PendingQuestion.State.ANSWERED]):
        PendingQuestion.objects.filter(pk=question.pk).update(state=PendingQuestion.State.REJECTED)
        async_to_sync(close_question)(session_id, question, answer=None, aborted=True)
    turns.next_work(session_id)  # drops the queued messages, releases the claim: idle
    if was_busy:
        turns.publish_idle(session_id)
