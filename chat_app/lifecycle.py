"""The lifecycle of a turn, in one place: every change of a turn's state happens in this module.

    queued --claim--> claimed --run--> running --finish--> finished
                          ^                \\--suspend--> waiting --claim (answer, new message, abort)--> claimed
    queued --abort (the queue is cleared)--> finished

A POST message enqueues a turn: the message is taken then (FIFO); GET messages lists it as queued until its turn
starts, and it gets its place in the conversation (its message id) when it starts, after the turn before it. A
session has at most one active turn (claimed, running or waiting; a database constraint backs it).

Claims are compare-and-sets on the session row, so any gateway process may take a session's next piece of work; the
claiming process drains the session: it runs its turns one after the other on the server's event loop. A turn waiting
for an answer belongs to no process, so the answer (or an abort, or a new message instead of the answer) may arrive
at any process, which then claims it. An abort is a flag on the turn that its runner polls; a runner that died (a
gateway restart) is recognised by its pid on this host or its heartbeat elsewhere, and its turn ends as cut.

What is done with a claimed piece of work is the agent's (chat_app.agent.turn.perform), handed to this module at
start-up by ChatAppConfig.ready() (use_performer), so the lifecycle does not import the agent."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
from dataclasses import dataclass
from typing import Awaitable, Callable

from asgiref.sync import async_to_sync
from django.db import transaction
from django.utils import timezone

from chat_app import events, frames
from chat_app.models import ChatSession, Message, Part, PendingQuestion, Turn, sortable_id
from chat_app.parts import text_part
from chat_app.threads import in_thread
from core.identity import process_alive, process_identity

logger = logging.getLogger(__name__)

ABORT_POLL_SECONDS = 0.1
HEARTBEAT_SECONDS = 10
STALE_HEARTBEAT_SECONDS = 60

_server_loop: asyncio.AbstractEventLoop | None = None
_drains: dict[str, asyncio.Task] = {}
_wakeups: set[str] = set()
_performer: Callable[["Work"], Awaitable[None]] | None = None


def bind_server_loop(loop: asyncio.AbstractEventLoop) -> None:
    """The gateway's event loop (uvicorn's), where turns run; set by the ASGI application on its first request."""
    global _server_loop
    if _server_loop is not loop:
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="chat"))
        _server_loop = loop


def use_performer(performer: Callable[["Work"], Awaitable[None]]) -> None:
    """What runs a claimed piece of work to its end (finished or waiting): the agent's turn runner."""
    global _performer
    _performer = performer


def identity() -> str:
    return process_identity()


def runner_alive(runner: str, heartbeat_at) -> bool:
    return process_alive(runner, heartbeat_at, STALE_HEARTBEAT_SECONDS)


# --- reads -------------------------------------------------------------------------------------------------------


def active_turn(session_id: str) -> Turn | None:
    return Turn.objects.filter(session_id=session_id, state__in=Turn.ACTIVE).first()


def queued_turns(session_id: str):
    return Turn.objects.filter(session_id=session_id, state=Turn.State.QUEUED).order_by("id")


# --- transitions (synchronous, each one transaction holding the session row) -----------------------------------


def _lock_session(session_id: str) -> ChatSession:
    return ChatSession.objects.select_for_update().get(pk=session_id)


def enqueue(session_id: str, text: str, *, user_id: int | None = None, username: str | None = None) -> Turn:
    """queued: the message is taken, with the account that wrote it (the agent acts as that user)."""
    with transaction.atomic():
        _lock_session(session_id)
        return Turn.objects.create(session_id=session_id, text=text, queued_message_id=sortable_id("msg_"), user_id=user_id, username=username)


@dataclass(frozen=True)
class Work:
    """What a claim gives the claiming process to do with a turn it now holds (claimed)."""

    kind: str  # start | resume (an answered question) | reject (a new message instead of the answer) | abort | cut
    turn: Turn
    question: PendingQuestion | None = None


def _take(turn: Turn) -> Turn:
    turn.state, turn.runner, turn.heartbeat_at = Turn.State.CLAIMED, identity(), timezone.now()
    turn.save(update_fields=["state", "runner", "heartbeat_at"])
    return turn


def claim(session_id: str) -> Work | None:
    """The session's next piece of work, claimed for this process; None when there is none or another live
    process (or a drain of this one) works on the session."""
    me = identity()
    with transaction.atomic():
        _lock_session(session_id)
        turn = Turn.objects.filter(session_id=session_id, state__in=Turn.ACTIVE).first()
        if turn is not None and turn.state in (Turn.State.CLAIMED, Turn.State.RUNNING):
            if turn.runner == me or runner_alive(turn.runner, turn.heartbeat_at):
                return None
            return Work("cut", _take(turn))
        if turn is not None:  # waiting
            if turn.abort_requested:
                return Work("abort", _take(turn))
            question = turn.questions.filter(state__in=PendingQuestion.OPEN).order_by("created_at").first()
            if question is not None and question.state == PendingQuestion.State.ANSWERED:
                return Work("resume", _take(turn), question)
            # a message taken after the question was asked comes instead of the answer (one taken before waits)
            if question is None or queued_turns(session_id).filter(created_at__gt=question.created_at).exists():
                return Work("reject", _take(turn), question)
            return None
        queued = queued_turns(session_id).first()
        return Work("start", _take(queued)) if queued is not None else None


def run(work: Work) -> frames.Frame | None:
    """claimed -> running. Starting a turn writes its user message (its id, and so its place in the conversation,
    is given now); returns that message's frame."""
    turn = work.turn
    with transaction.atomic():
        turn.state = Turn.State.RUNNING
        fields = ["state"]
        frame = None
        if work.kind == "start":
            frame = _write_user_message(turn)
            turn.started_at = timezone.now()
            fields += ["user_message_id", "started_at"]
        turn.save(update_fields=fields)
    return frame


def _write_user_message(turn: Turn) -> frames.Frame:
    message_id = turn.queued_message_id
    if Message.objects.filter(session_id=turn.session_id, id__gt=message_id).exists():
        message_id = sortable_id("msg_")  # it waited behind another turn: it goes after that turn's messages
    taken = int(turn.created_at.timestamp() * 1000)
    info = {"id": message_id, "sessionID": turn.session_id, "role": "user", "time": {"created": taken}, "agent": "main"}
    if message_id != turn.queued_message_id:
        info["queuedID"] = turn.queued_message_id
    part = text_part(turn.session_id, message_id, turn.text, taken)
    message = Message.objects.create(id=message_id, session_id=turn.session_id, turn=turn, role=Message.Role.USER, info=info)
    Part.objects.create(id=part["id"], message=message, type="text", data=part)
    turn.user_message_id = message_id
    return frames.message(turn.session_id, info, [part])


def suspend(turn: Turn) -> None:
    """running -> waiting: it waits for an answer and belongs to no process meanwhile."""
    Turn.objects.filter(pk=turn.pk).update(state=Turn.State.WAITING, runner="", heartbeat_at=None)


def finish(turn: Turn, outcome: str) -> None:
    """-> finished; the session goes idle (or on to its next queued turn)."""
    Turn.objects.filter(pk=turn.pk).update(state=Turn.State.FINISHED, outcome=outcome, runner="", heartbeat_at=None, finished_at=timezone.now())
    publish_idle(turn.session_id)


def publish_idle(session_id: str) -> None:
    events.publish(session_id, *frames.session_status(session_id, "idle"))
    events.publish(session_id, *frames.session_idle())
    events.prune(session_id)


def request_abort(session_id: str) -> bool:
    """Flags the active turn for abort and clears the queue; False when the session was idle."""
    with transaction.atomic():
        _lock_session(session_id)
        queued_turns(session_id).update(state=Turn.State.FINISHED, outcome=Turn.Outcome.ABORTED, finished_at=timezone.now())
        return Turn.objects.filter(session_id=session_id, state__in=Turn.ACTIVE).update(abort_requested=True) > 0


def abort_requested(turn_id: str) -> bool:
    return bool(Turn.objects.filter(pk=turn_id).values_list("abort_requested", flat=True).first())


def beat(turn_id: str) -> None:
    Turn.objects.filter(pk=turn_id).update(heartbeat_at=timezone.now())


def recover_cut_turns() -> list[str]:
    """At gateway start: turns whose runner is dead end as cut (session.error) instead of staying busy forever."""
    cut = []
    for session_id in Turn.objects.filter(state__in=[Turn.State.CLAIMED, Turn.State.RUNNING]).values_list("session_id", flat=True):
        work = claim(session_id)
        if work is not None:
            async_to_sync(perform)(work)
            cut.append(session_id)
    return cut


# --- the drain (asynchronous, on the server loop) ----------------------------------------------------------------


def wake(session_id: str) -> None:
    """Makes sure the session's new work (a message, an answer, an abort) is picked up: on the server loop when this
    is a serving gateway, else (tests, management commands) right here until the session's work is done."""
    if _server_loop is not None and _server_loop.is_running():
        asyncio.run_coroutine_threadsafe(_start_drain(session_id), _server_loop)
    else:
        async_to_sync(drain)(session_id)


async def _start_drain(session_id: str) -> None:
    running = _drains.get(session_id)
    if running is not None and not running.done():
        _wakeups.add(session_id)  # it may be about to stop: it looks for work once more instead
        return
    # in a context of its own: wake() is called from a request's thread, whose context (its ThreadSensitiveContext,
    # ended with the request) the scheduled call would hand on to the session's whole drain
    _drains[session_id] = asyncio.get_running_loop().create_task(drain(session_id), context=contextvars.Context())


async def drain(session_id: str) -> None:
    try:
        while True:
            _wakeups.discard(session_id)
            work = await in_thread(claim)(session_id)
            if work is None:
                if session_id in _wakeups:
                    continue
                return
            await perform(work)
    finally:
        _drains.pop(session_id, None)


async def perform(work: Work) -> None:
    """Runs one claimed piece of work to its end (finished or waiting); whatever breaks, the turn never stays
    claimed."""
    try:
        await _performer(work)
    except Exception:  # noqa: BLE001 - the session must not stay busy
        logger.exception("chat session %s: the runtime failed on turn %s", work.turn.session_id, work.turn.id)
        await in_thread(_fail)(work.turn)


def _fail(turn: Turn) -> None:
    events.publish(turn.session_id, *frames.session_error(turn.session_id, {"name": "UnknownError", "data": {"message": "internal error in the chat runtime"}}))
    finish(turn, Turn.Outcome.FAILED)


async def watch(turn: Turn, work: asyncio.Task) -> None:
    """Cancels the work when an abort is requested (from any process); keeps the turn's heartbeat fresh."""
    loop = asyncio.get_running_loop()
    last_beat = loop.time()
    while not work.done():
        await asyncio.sleep(ABORT_POLL_SECONDS)
        if await in_thread(abort_requested)(turn.id):
            work.cancel()
            return
        if loop.time() - last_beat > HEARTBEAT_SECONDS:
            last_beat = loop.time()
            await in_thread(beat)(turn.id)
