"""Projects, their chat session, the session's event log, messages with parts, and pending agent questions.

Everything a turn produces is a database record, so any gateway process can serve any session and a restart
loses nothing but the turn that was running."""

import os
import secrets
import time

from django.db import models

from models_app.models import IfcModel

PROJECT_ID_PATTERN = r"p_[0-9a-f]{16}"
SESSION_ID_PATTERN = r"c_[0-9a-f]{16}"
INTERRUPT_ID_PATTERN = r"que_[0-9a-f]{12}"


def new_project_id() -> str:
    return "p_" + secrets.token_hex(8)


def new_session_id() -> str:
    return "c_" + secrets.token_hex(8)


def new_external_session_id() -> str:
    return "ses_" + secrets.token_hex(12)


def sortable_id(prefix: str) -> str:
    """prefix + 12 hex digits of the time in ms + 8 random hex digits: ids sort in creation order (clients sort
    messages and parts by id)."""
    return f"{prefix}{time.time_ns() // 1_000_000:012x}{os.urandom(4).hex()}"


def new_interrupt_id() -> str:
    return "que_" + secrets.token_hex(6)


class Project(models.Model):
    class Kind(models.TextChoices):
        IFC = "ifc"
        CAD = "cad"
        CAD_TO_IFC = "cad->ifc"

    id = models.CharField(primary_key=True, max_length=18, default=new_project_id, editable=False)
    title = models.CharField(max_length=255)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # A deleted model leaves its project with it (the link row cascades away).
    ifc_models = models.ManyToManyField(IfcModel, through="ProjectModel", related_name="projects", blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.title} ({self.id})"


class ProjectModel(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE)
    model = models.OneToOneField(IfcModel, on_delete=models.CASCADE, related_name="project_link")

    class Meta:
        ordering = ["id"]


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

    # Turn bookkeeping. busy from a turn's start to its end (a turn waiting for an answer stays busy); `runner`
    # names the process working on it ("" while the turn waits for an answer, or when idle).
    status = models.CharField(max_length=4, choices=Status.choices, default=Status.IDLE)
    runner = models.CharField(max_length=128, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    abort_requested = models.BooleanField(default=False)
    last_seq = models.BigIntegerField(default=0)  # id of the newest frame of the event log

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.title or self.id} ({self.id})"


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

    class State(models.TextChoices):
        QUEUED = "queued"  # a user message waiting for its turn
        DONE = "done"

    id = models.CharField(primary_key=True, max_length=40, editable=False)
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=9, choices=Role.choices)
    state = models.CharField(max_length=6, choices=State.choices, default=State.DONE)
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

    interrupt_id = models.CharField(primary_key=True, max_length=16, default=new_interrupt_id, editable=False)
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="questions")
    frame = models.JSONField()  # the question.ask data
    message_id = models.CharField(max_length=40)
    call_id = models.CharField(max_length=64)
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    answer = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
