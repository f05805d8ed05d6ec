"""The chat session of a project, the session's event log, messages with parts, and pending agent questions.

Everything a turn produces is a database record, so any gateway process can serve any session and a restart
loses nothing but the turn that was running."""

import os
import secrets
import threading
import time

from django.db import models

from models_app.models import IfcModel, Project, new_project_id  # noqa: F401 - new_project_id: named by migration 0001

SESSION_ID_PATTERN = r"c_[0-9a-f]{16}"
INTERRUPT_ID_PATTERN = r"que_[0-9a-f]{12}"


def new_session_id() -> str:
    return "c_" + secrets.token_hex(8)


def new_external_session_id() -> str:
    return "ses_" + secrets.token_hex(12)


_last_id_time = [0, 0]  # (ms, sequence) of the newest id made by this process
_id_lock = threading.Lock()


def sortable_id(prefix: str) -> str:
    """prefix + 12 hex digits of the time in ms + 4 hex digits of a sequence + 4 random hex digits: ids sort in
    creation order (clients sort messages and parts by id), also several within one millisecond of one process."""
    with _id_lock:
        now = time.time_ns() // 1_000_000
        if now <= _last_id_time[0]:
            now, sequence = _last_id_time[0], _last_id_time[1] + 1
        else:
            sequence = 0
        _last_id_time[:] = [now, sequence]
    return f"{prefix}{now:012x}{sequence % 0x10000:04x}{os.urandom(2).hex()}"


def new_interrupt_id() -> str:
    return "que_" + secrets.token_hex(6)


class ChatSession(models.Model):
    class Status(models.TextChoices):
        IDLE = "idle"
        BUSY = "busy"

    id = models.CharField(primary_key=True, max_length=18, default=new_session_id, editable=False)
    external_session_id = models.CharField(max_length=40, default=new_external_session_id, editable=False)
    title = models.CharField(max_length=255, blank=True, default="")
    project = models.OneToOneField(Project, null=True, blank=True, on_delete=models.CASCADE, related_name="session")
    model = models.ForeignKey(IfcModel, null=True, blank=True, on_delete=models.SET_NULL, related_name="chat_sessions")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    last_seq = models.BigIntegerField(default=0)  # id of the newest frame of the event log
    allowed_tools = models.JSONField(default=list, blank=True, help_text="irreversible tools the user allowed for the whole session (answer 'always')")
    usage = models.JSONField(default=dict, blank=True, help_text="tokens and cost of every model step so far: input, output, reasoning, cacheRead, cost, steps")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.title or self.id} ({self.id})"

    @property
    def status(self) -> str:
        """busy from a turn's start to its end (waiting for an answer included), else idle."""
        return self.Status.BUSY if self.turns.filter(state__in=Turn.ACTIVE).exists() else self.Status.IDLE


def new_turn_id() -> str:
    return sortable_id("trn_")


class Turn(models.Model):
    """A user message and everything the agent does for it. The lifecycle (chat_app/lifecycle.py is the only
    writer of `state`):

        queued -> claimed -> running -> finished
                                 `-> waiting (a question or permission request) -> claimed -> running -> ...

    A session has at most one active turn (claimed, running or waiting); queued turns start in the order they were
    taken. `runner` names the gateway process working on a claimed or running turn."""

    class State(models.TextChoices):
        QUEUED = "queued"
        CLAIMED = "claimed"
        RUNNING = "running"
        WAITING = "waiting"
        FINISHED = "finished"

    class Outcome(models.TextChoices):
        NONE = "", "-"
        COMPLETED = "completed"
        ABORTED = "aborted"
        FAILED = "failed"  # the provider or the runtime failed (session.error)
        CUT = "cut"  # its process died (session.error)
        INTERRUPTED = "interrupted"  # a new message came instead of the answer it waited for

    ACTIVE = (State.CLAIMED, State.RUNNING, State.WAITING)

    id = models.CharField(primary_key=True, max_length=40, default=new_turn_id, editable=False)
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="turns")
    state = models.CharField(max_length=8, choices=State.choices, default=State.QUEUED, db_index=True)
    outcome = models.CharField(max_length=11, choices=Outcome.choices, blank=True, default=Outcome.NONE)
    text = models.TextField(help_text="the user's message")
    # who wrote the message: the agent acts as this user (chat_app.agent.acting); null when no account wrote it
    username = models.CharField(max_length=150, null=True, blank=True)
    user_id = models.IntegerField(null=True, blank=True)
    queued_message_id = models.CharField(max_length=40, help_text="the id GET messages shows while the turn is queued")
    user_message_id = models.CharField(max_length=40, blank=True, default="", help_text="the user message, once the turn started")
    runner = models.CharField(max_length=128, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    abort_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, help_text="when the message was taken")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["session"], condition=models.Q(state__in=["claimed", "running", "waiting"]), name="one_active_turn_per_session"),
        ]

    def __str__(self):
        return f"{self.id} ({self.state})"


class SessionEvent(models.Model):
    """One SSE frame of a session, deltas included; `seq` is its SSE id."""

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="events")
    seq = models.BigIntegerField()
    event = models.CharField(max_length=40)
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="one_frame_per_seq")]


class Message(models.Model):
    """A user or assistant message; `info` is the message object of the frames, kept current."""

    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    id = models.CharField(primary_key=True, max_length=40, editable=False)
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="messages")
    turn = models.ForeignKey(Turn, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages")
    role = models.CharField(max_length=9, choices=Role.choices)
    compacted = models.BooleanField(default=False, help_text="summarised into a compaction message: kept for people, no longer sent to the model")
    subagent_id = models.CharField(max_length=20, blank=True, default="")
    info = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]


class Part(models.Model):
    """A part of a message (text, reasoning, tool, step-start, step-finish); `data` is the whole part object."""

    id = models.CharField(primary_key=True, max_length=40, editable=False)
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="parts")
    type = models.CharField(max_length=16)
    data = models.JSONField()

    class Meta:
        ordering = ["id"]


class PendingQuestion(models.Model):
    """A question.ask of the agent; answerable after reloads and restarts until it is answered or rejected."""

    class State(models.TextChoices):
        PENDING = "pending"
        ANSWERED = "answered"  # the answer is in; the turn has not resumed with it yet
        CLOSED = "closed"  # the turn resumed with the answer
        REJECTED = "rejected"  # aborted, or the user wrote a new message instead
    OPEN = (State.PENDING, State.ANSWERED)

    class Kind(models.TextChoices):
        QUESTION = "question"  # ask_user
        PERMISSION = "permission"  # an irreversible tool call waiting for the user's consent

    interrupt_id = models.CharField(primary_key=True, max_length=16, default=new_interrupt_id, editable=False)
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="questions")
    turn = models.ForeignKey(Turn, null=True, blank=True, on_delete=models.CASCADE, related_name="questions")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.QUESTION)
    subagent_id = models.CharField(max_length=20, blank=True, default="")
    frame = models.JSONField()  # the question.ask data
    message_id = models.CharField(max_length=40)
    call_id = models.CharField(max_length=64)
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    answer = models.TextField(blank=True, default="")
    # a permission request: what the guarded call needs of whoever answers it, and where (its model, else the session's)
    guarded_capability = models.CharField(max_length=16, blank=True, default="")
    guarded_model_id = models.CharField(max_length=40, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
