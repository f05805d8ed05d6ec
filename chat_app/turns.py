"""Who works on a session's turns, and when.

A session is claimed by one gateway process at a time (`runner`, a compare-and-set on its row). The claiming
process drains the session's work in order: a question's answer to resume, queued user messages to start (FIFO),
one turn at a time. A turn waiting for an answer releases the claim and stays busy, so the answer may arrive at any
process. An abort is a flag on the row the runner polls; a runner that died (gateway restart) is detected by its
pid on this host or its heartbeat elsewhere, and its cut turn ends with session.error."""

from __future__ import annotations

import asyncio
import concurrent.futures
import enum
import logging
import socket
from dataclasses import dataclass
from datetime import timedelta

import psutil
from asgiref.sync import async_to_sync
from django.db import transaction
from django.utils import timezone

from chat_app import events
from chat_app.agent import runtime
from chat_app.agent.loop import Outcome, TurnContext, close_aborted, close_question, run_turn
from chat_app.agent.tools import in_thread
from chat_app.agent.writer import MessageWriter, now_ms
from chat_app.models import ChatSession, Message, PendingQuestion

logger = logging.getLogger(__name__)

ABORT_POLL_SECONDS = 0.1
HEARTBEAT_SECONDS = 10
STALE_HEARTBEAT_SECONDS = 60
NOT_ANSWERED = "The user sent a new message instead of answering."

_server_loop: asyncio.AbstractEventLoop | None = None
_drains: dict[str, asyncio.Task] = {}
_wakeups: set[str] = set()


def bind_server_loop(loop: asyncio.AbstractEventLoop) -> None:
    """The gateway's event loop (Daphne's), where turns run; set by the ASGI application on its first request."""
    global _server_loop
    if _server_loop is not loop:
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="chat"))
        _server_loop = loop


def identity() -> str:
    process = psutil.Process()
    return f"{socket.gethostname()}:{process.pid}:{int(process.create_time())}"


def runner_alive(runner: str, heartbeat_at) -> bool:
    host, _, rest = runner.partition(":")
    pid, _, started = rest.partition(":")
    if host == socket.gethostname() and pid.isdigit():
        try:
            return int(psutil.Process(int(pid)).create_time()) == int(started or 0)
        except psutil.NoSuchProcess:
            return False
    return heartbeat_at is not None and timezone.now() - heartbeat_at < timedelta(seconds=STALE_HEARTBEAT_SECONDS)


# --- claims (synchronous, each one transaction on the session row) -----------------------------------------------


class Claim(enum.Enum):
    TAKEN = "taken"  # nobody was working on the session; now this process is
    RUNNING_HERE = "running here"  # a drain of this process is working on it
    RUNNING_ELSEWHERE = "running elsewhere"  # a live runner of another process is


def claim(session_id: str) -> Claim:
    """Takes the session for this process unless a live runner has it. A dead runner's turn is ended first."""
    me = identity()
    with transaction.atomic():
        session = ChatSession.objects.select_for_update().get(pk=session_id)
        if session.runner == me and session_id in _drains:
            return Claim.RUNNING_HERE
        if session.runner and session.runner != me and runner_alive(session.runner, session.heartbeat_at):
            return Claim.RUNNING_ELSEWHERE
        cut = bool(session.runner) and session.runner != me
        session.runner, session.heartbeat_at = me, timezone.now()
        session.save(update_fields=["runner", "heartbeat_at"])
    if cut:
        end_cut_turn(session_id)
    return Claim.TAKEN


def wake(session_id: str) -> None:
    """Makes sure the session's new work (a message, an answer) is picked up: by this process unless a live
    runner elsewhere has the session (its drain picks the work up after its current turn)."""
    if claim(session_id) is not Claim.RUNNING_ELSEWHERE:
        schedule(session_id)


@dataclass(frozen=True)
class Work:
    kind: str  # "resume" (an answered question), "reject" (a new message instead of an answer), "start"
    message: Message | None = None
    question: PendingQuestion | None = None
    message_frame: dict | None = None  # the user message's `message` frame, for "start"


def next_work(session_id: str) -> Work | None:
    """The next thing to do for a claimed session, or None after releasing the claim (idle, or busy waiting for an
    answer)."""
    with transaction.atomic():
        session = ChatSession.objects.select_for_update().get(pk=session_id)
        if session.abort_requested:
            session.messages.filter(state=Message.State.QUEUED).delete()
        question = session.questions.filter(state__in=[PendingQuestion.State.PENDING, PendingQuestion.State.ANSWERED]).first()
        queued = session.messages.filter(state=Message.State.QUEUED).order_by("id").first()
        if question is not None and question.state == PendingQuestion.State.ANSWERED:
            return Work("resume", question=question)
        if question is not None and queued is not None:
            return Work("reject", question=question)
        if question is None and queued is not None:
            queued.state = Message.State.DONE
            queued.save(update_fields=["state"])
            session.status, session.abort_requested = ChatSession.Status.BUSY, False
            session.save(update_fields=["status", "abort_requested"])
            frame = {"sessionID": session_id, "info": queued.info, "parts": [p.data for p in queued.parts.all()]}
            return Work("start", message=queued, message_frame=frame)
        session.runner = ""
        session.abort_requested = False
        if question is None:
            session.status = ChatSession.Status.IDLE
        session.save(update_fields=["runner", "status", "abort_requested"])
        return None


def end_cut_turn(session_id: str) -> None:
    """A turn whose runner died (a gateway restart) never stays busy: its open parts and message fail, session.error
    tells why, and the session goes idle."""
    session = ChatSession.objects.get(pk=session_id)
    open_messages = session.messages.filter(role=Message.Role.ASSISTANT, info__time__completed__isnull=True)
    for message in open_messages:
        for part in message.parts.filter(type="tool"):
            state = part.data["state"]
            if state["status"] in ("pending", "running"):
                part.data["state"] = {"status": "error", "input": state.get("input", {}), "error": "interrupted by a gateway restart",
                                      "metadata": {"interrupted": True}, "time": {"start": state.get("time", {}).get("start", now_ms()), "end": now_ms()}}
                part.save(update_fields=["data"])
                events.publish(session_id, "message.part.updated", {"sessionID": session_id, "part": part.data, "time": now_ms()})
        message.info["time"]["completed"] = now_ms()
        message.info["error"] = {"name": "UnknownError", "data": {"message": "the gateway restarted during this turn"}}
        message.save(update_fields=["info"])
        events.publish(session_id, "message.updated", {"sessionID": session_id, "info": message.info})
    session.questions.filter(state=PendingQuestion.State.PENDING).update(state=PendingQuestion.State.REJECTED)
    events.publish(session_id, "session.error", {"sessionID": session_id, "error": {"name": "UnknownError", "data": {"message": "the turn was cut by a gateway restart"}}})
    ChatSession.objects.filter(pk=session_id).update(status=ChatSession.Status.IDLE, runner="", abort_requested=False)
    publish_idle(session_id)


def recover_cut_turns() -> list[str]:
    """At gateway start: turns whose runner is dead (this host's processes by pid, others by heartbeat) end with
    session.error instead of staying busy forever."""
    cut = []
    for session_id, runner, heartbeat_at in ChatSession.objects.exclude(runner="").values_list("id", "runner", "heartbeat_at"):
        if runner != identity() and not runner_alive(runner, heartbeat_at) and claim(session_id) is Claim.TAKEN:
            next_work(session_id)
            cut.append(session_id)
    return cut


def publish_idle(session_id: str) -> None:
    events.publish(session_id, "session.status", {"sessionID": session_id, "status": "idle"})
    events.publish(session_id, "session.idle", {})
    events.prune(session_id)


# --- the drain (asynchronous, on the server loop) ----------------------------------------------------------------


def schedule(session_id: str) -> None:
    """Starts draining a claimed session: on the server loop when this is a serving gateway, else (tests,
    management commands) right here until the session's work is done."""
    if _server_loop is not None and _server_loop.is_running():
        asyncio.run_coroutine_threadsafe(_start_drain(session_id), _server_loop)
    else:
        async_to_sync(drain)(session_id)


async def _start_drain(session_id: str) -> None:
    running = _drains.get(session_id)
    if running is not None and not running.done():
        _wakeups.add(session_id)  # it may be about to stop: it claims the session again instead
        return
    _drains[session_id] = asyncio.get_running_loop().create_task(drain(session_id))


async def _watch(session_id: str, work: asyncio.Task) -> None:
    """Cancels the work when an abort is requested (from any process); keeps the claim's heartbeat fresh."""
    last_beat = asyncio.get_running_loop().time()
    while not work.done():
        await asyncio.sleep(ABORT_POLL_SECONDS)
        row = await in_thread(lambda: ChatSession.objects.filter(pk=session_id).values_list("abort_requested", flat=True).first())()
        if row:
            work.cancel()
            return
        if asyncio.get_running_loop().time() - last_beat > HEARTBEAT_SECONDS:
            last_beat = asyncio.get_running_loop().time()
            await in_thread(lambda: ChatSession.objects.filter(pk=session_id).update(heartbeat_at=timezone.now()))()


async def drain(session_id: str) -> None:
    try:
        while True:
            work = await in_thread(next_work)(session_id)
            if work is None:
                if session_id in _wakeups and await in_thread(claim)(session_id) is Claim.TAKEN:
                    _wakeups.discard(session_id)
                    continue
                _wakeups.discard(session_id)
                return
            await _do(session_id, work)
    except Exception:  # noqa: BLE001 - whatever broke, the session must not stay claimed and busy
        logger.exception("chat session %s: the runner failed", session_id)
        await in_thread(_fail)(session_id)
    finally:
        _drains.pop(session_id, None)


def _fail(session_id: str) -> None:
    events.publish(session_id, "session.error", {"sessionID": session_id, "error": {"name": "UnknownError", "data": {"message": "internal error in the chat runtime"}}})
    ChatSession.objects.filter(pk=session_id).update(status=ChatSession.Status.IDLE, runner="", abort_requested=False)
    publish_idle(session_id)


async def _do(session_id: str, work: Work) -> None:
    if work.kind == "reject":
        await in_thread(_mark_question)(work.question, PendingQuestion.State.REJECTED)
        await close_question(session_id, work.question, answer=None, error=NOT_ANSWERED)
        await in_thread(publish_idle)(session_id)
        return
    ctx = await in_thread(runtime.turn_context)(session_id, work)
    if work.kind == "start":
        await events.apublish(session_id, "session.status", {"sessionID": session_id, "status": "busy"})
        await events.apublish(session_id, "message", work.message_frame)
    task = asyncio.get_running_loop().create_task(_turn(ctx, work))
    watcher = asyncio.get_running_loop().create_task(_watch(session_id, task))
    try:
        outcome = await task
    except asyncio.CancelledError:
        if asyncio.current_task().cancelling():
            raise  # this drain itself is being cancelled (server shutdown)
        await close_aborted(ctx)
        await _reject_open_questions(session_id)
        await in_thread(publish_idle)(session_id)
        return
    except Exception as exc:  # noqa: BLE001 - a provider or runtime failure ends the turn with session.error
        logger.exception("chat session %s: turn failed", session_id)
        await _end_failed(ctx, exc)
        return
    finally:
        watcher.cancel()
    if outcome is Outcome.FINISHED:
        await in_thread(publish_idle)(session_id)


async def _turn(ctx: TurnContext, work: Work) -> Outcome:
    if work.kind == "resume":
        await in_thread(_mark_question)(work.question, PendingQuestion.State.CLOSED)
        await close_question(ctx.session_id, work.question, answer=work.question.answer)
    return await run_turn(ctx)


def _mark_question(question: PendingQuestion, state: str) -> None:
    PendingQuestion.objects.filter(pk=question.pk).update(state=state)


async def _reject_open_questions(session_id: str) -> None:
    for question in await in_thread(lambda: list(PendingQuestion.objects.filter(session_id=session_id, state=PendingQuestion.State.PENDING)))():
        await in_thread(_mark_question)(question, PendingQuestion.State.REJECTED)
        await close_question(session_id, question, answer=None, aborted=True)


async def _end_failed(ctx: TurnContext, exc: Exception) -> None:
    error = runtime.describe_error(exc)
    writer: MessageWriter | None = ctx.writer
    if writer is not None:
        writer.info["error"] = error
        writer.info["time"]["completed"] = now_ms()
        await writer.publish_info()
    await events.apublish(ctx.session_id, "session.error", {"sessionID": ctx.session_id, "error": error})
    await in_thread(publish_idle)(ctx.session_id)
