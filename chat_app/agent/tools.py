"""The agent's tools: a name, a description, JSON-schema parameters and an async function. A tool that fails
raises ToolError: its message goes back to the model as the tool's output, and the turn goes on."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Awaitable, Callable

import jsonschema
from asgiref.sync import sync_to_async

if TYPE_CHECKING:
    from chat_app.agent.loop import TurnContext


class ToolError(Exception):
    pass


@dataclass
class ToolResult:
    output: str  # what the model reads
    title: str = ""  # one short line for people
    metadata: dict = field(default_factory=dict)  # the domain result, for the client
    frames: list[tuple[str, dict]] = field(default_factory=list)  # (event, data) published after the tool part


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict
    run: Callable[["TurnContext", dict], Awaitable[ToolResult]] | None = None
    suspends_turn: bool = False  # ask_user: the turn waits for the user's answer

    def spec(self) -> dict:
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}

    def parse_arguments(self, raw: str) -> dict:
        try:
            arguments = json.loads(raw or "{}")
        except ValueError as exc:
            raise ToolError(f"the arguments are not valid JSON ({exc}): {raw[:200]}") from None
        if not isinstance(arguments, dict):
            raise ToolError("the arguments must be a JSON object")
        try:
            jsonschema.validate(arguments, self.parameters)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            raise ToolError(f"invalid arguments{' at ' + where if where else ''}: {exc.message}") from None
        return arguments


def object_schema(properties: dict | None = None, required: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "properties": properties or {}, "required": list(required), "additionalProperties": False}


def in_thread(function):
    """A blocking service call run off the event loop."""
    return sync_to_async(function, thread_sensitive=False)


def json_output(payload, limit: int = 12_000) -> str:
    """JSON for the model to read, cut at `limit` characters (a diff or a script can be long)."""
    text = json.dumps(payload, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + f"... [cut: {len(text) - limit} more characters]"


def bound_model_id(ctx: "TurnContext", arguments: dict) -> str:
    model_id = arguments.get("modelId") or ctx.model_id
    if not model_id:
        raise ToolError("no model is bound to this session and no modelId was given (see session_info)")
    return model_id


MODEL_ID = {"modelId": {"type": "string", "description": "defaults to the session's model"}}


ASK_USER = Tool(
    name="ask_user",
    description="Ask the user a question and wait for the answer (use before irreversible steps such as saving a version).",
    parameters=object_schema(
        {
            "question": {"type": "string", "minLength": 1},
            "header": {"type": "string"},
            "options": {"type": "array", "items": object_schema({"label": {"type": "string"}, "description": {"type": "string"}}, ("label",))},
            "multiple": {"type": "boolean"},
        },
        ("question",),
    ),
    suspends_turn=True,
)
