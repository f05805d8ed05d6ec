"""Use cases of the chat: the session of a project (or of a lone model), messages, answers and aborts. Views, admin
actions and the agent call these; projects themselves are models_app's (project_services)."""

from __future__ import annotations

import re
import time

from django.db import transaction

from chat_app import events, frames, lifecycle
from chat_app.consent import parse_permission_answer
from chat_app.models import INTERRUPT_ID_PATTERN, SESSION_ID_PATTERN, ChatSession, PendingQuestion, Turn
from chat_app.parts import text_part
from chat_app.selectors import session_scope, visible_sessions
from accounts_app.policy import require
from accounts_app.roles import Capability
from api.principal import Principal
from core.errors import Invalid, NotFound
from core.lookups import get_or_not_found
from models_app.access_scopes import model_scope
from models_app.models import IfcModel, Project
from models_app.selectors import model_get, project_exists, project_models, project_of_model

SESSION_ID_RE = re.compile(rf"^{SESSION_ID_PATTERN}$")
INTERRUPT_ID_RE = re.compile(rf"^{INTERRUPT_ID_PATTERN}$")
ABORT_WAIT_SECONDS = 2.0


# --- sessions ----------------------------------------------------------------------------------------------------


def session_get(session_id: str) -> ChatSession:
    return get_or_not_found(
        visible_sessions().select_related("project"), pk=session_id, well_formed=bool(SESSION_ID_RE.match(session_id or "")),
        invalid=f"chat session {session_id!r} not found (ids look like c_ + 16 lowercase hex digits)",
        missing=f"chat session {session_id} not found",
    )


def session_list():
    return visible_sessions().select_related("project", "model").order_by("-created_at")


def _project_model(project: Project) -> IfcModel | None:
    return project_models(project).first()


def session_open(*, title: str = "", project_id: str | None = None, model_id: str | None = None) -> ChatSession:
    """The project's one session (created on first use), or, in the legacy form, the model's one session (the
    project's session for a model of a project; a new session without a model when modelId is empty)."""
    if project_id:
        if not project_exists(project_id):
            raise Invalid(f"project {project_id} does not exist")
        with transaction.atomic():
            project = Project.objects.select_for_update().get(pk=project_id)
            session = ChatSession.objects.filter(project=project).first()
            if session is None:
                session = _session_create(project=project, title=title or project.title, model=_project_model(project))
        return session
    if model_id:
        try:
            model = model_get(model_id)
        except NotFound as exc:  # like an unknown project: a parameter error of this request (spec: 400, 40001)
            raise Invalid(str(exc.detail)) from None
        project_id = project_of_model(model.id)
        if project_id is not None:  # a project's model talks in the project's one session
            return session_open(title=title, project_id=project_id)
        with transaction.atomic():
            IfcModel.objects.select_for_update().filter(pk=model.id).first()
            session = ChatSession.objects.filter(model=model, project__isnull=True).first()
            if session is None:
                session = _session_create(model=model, title=title)
        return session
    return _session_create(title=title)


def _session_create(**fields) -> ChatSession:
    """A new session; its first frame is session.creating (a stream that resumes from id 0 sees it)."""
    session = ChatSession.objects.create(**fields)
    events.publish(session.id, *frames.session_creating(session.id, session.project_id or "", session.model_id or ""))
    return session


def session_bind_model(session_id: str, model: IfcModel) -> None:
    ChatSession.objects.filter(pk=session_id).update(model=model)


# --- turns -------------------------------------------------------------------------------------------------------


def message_post(*, session_id: str, text: str, author: Principal | None = None) -> dict:
    """Takes a user message: it gets its own turn, which runs asynchronously when the turns taken before it are
    done (results arrive on the event stream). One taken while the agent waits for an answer comes instead of it.
    The turn keeps the author's account: the agent acts as that user (chat_app.agent.acting)."""
    session = session_get(session_id)
    if not text.strip():
        raise Invalid("text must not be empty")
    account = author if author is not None and author.has_account else None
    lifecycle.enqueue(session.id, text, user_id=account.user_id if account else None, username=account.name if account else None)
    lifecycle.wake(session.id)
    return {"accepted": True}


def _queued_message(turn: Turn) -> dict:
    taken = int(turn.created_at.timestamp() * 1000)
    info = {"id": turn.queued_message_id, "sessionID": turn.session_id, "role": "user", "time": {"created": taken}, "agent": "main", "queued": True}
    part = text_part(turn.session_id, turn.queued_message_id, turn.text, taken, part_id=f"prt_{turn.queued_message_id[4:]}")
    return {"info": info, "parts": [part]}


def messages_list(session_id: str) -> list[dict]:
    """[{info, parts}] of every message, sub-agents' included, in order; then the messages still waiting for their
    turn, in the order they were taken, marked queued (info.queued)."""
    session = session_get(session_id)
    messages = session.messages.prefetch_related("parts").order_by("id")
    listed = [{"info": message.info, "parts": [part.data for part in message.parts.all()]} for message in messages]
    return listed + [_queued_message(turn) for turn in lifecycle.queued_turns(session.id)]


def _require_consent_right(principal: Principal, session: ChatSession, question: PendingQuestion) -> None:
    """Only someone who may make the guarded call may allow it (the route already asked edit on the session)."""
    if question.kind != PendingQuestion.Kind.PERMISSION or not question.guarded_capability:
        return
    scope = model_scope(question.guarded_model_id) if question.guarded_model_id else session_scope(session.id)
    require(principal, Capability(question.guarded_capability), scope)


def question_answer(*, session_id: str, interrupt_id: str, answer: str, principal: Principal | None = None) -> dict:
    """Resumes the turn waiting on the question. Repeating the same answer is accepted again; another answer to a
    question already answered, or an unknown or closed question, is 404. A permission request takes once, always or
    reject (optionally followed by ': <reason>'), from someone who may make the call it guards (40300 otherwise)."""
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
        if principal is not None:
            _require_consent_right(principal, session, question)
        if question.kind == PendingQuestion.Kind.PERMISSION and parse_permission_answer(answer) is None:
            raise Invalid("a permission request is answered with once, always, or reject (optionally 'reject: <reason>')")
        question.state, question.answer = PendingQuestion.State.ANSWERED, answer
        question.save(update_fields=["state", "answer"])
    lifecycle.wake(session.id)
    return {"accepted": True}


def turn_abort(session_id: str) -> dict:
    """Stops the session's turn within a second (its running step and tools, its questions) and drops the queued
    messages. {aborted: false} when nothing was running."""
    session = session_get(session_id)
    if not lifecycle.request_abort(session.id):
        return {"aborted": False}
    lifecycle.wake(session.id)  # a turn waiting for an answer (or whose process died) is ended by whoever claims it
    deadline = time.monotonic() + ABORT_WAIT_SECONDS
    while time.monotonic() < deadline and lifecycle.active_turn(session.id) is not None:
        time.sleep(0.05)
    return {"aborted": True}
