"""What a language model streams, whichever model it is: the OpenAI-compatible client and the offline scripted
model both yield these, so the turn machinery (and every frame) is the same for both."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A fragment of a tool call: the first carries id and name, later ones more of the JSON arguments."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True)
class Usage:
    input: int = 0  # every prompt token, the cached ones included
    output: int = 0  # every completion token, the reasoning ones included
    reasoning: int = 0
    cached: int = 0


@dataclass(frozen=True)
class Finish:
    reason: str  # stop, tool_calls, length
