"""The agent's tools and their registry.

A tool is one declaration: a function decorated with `agent_tool(name, description, properties, required, ...)` in
a `chat_app/agent/*_tools.py` module that agent/registry.py imports. The function gets a ToolCall (its arguments and
the narrow ToolContext of the turn) and returns a ToolResult;
it runs in a worker thread, never on the server's event loop, so it may block (service calls, file reads) as it
likes. Options of the declaration:

- `takes_model`: the tool acts on one model: `modelId` (default: the session's model) is added to its parameters and
  must be a model of the session's project (or the session's own model, for a session without a project); anything
  else is a tool error the model reads. `call.model_id` is the checked id.
- `irreversible`: the call runs only after the user allowed it (a permission request, question.ask with kind
  permission), unless the user allowed the tool for the whole session.
- `native`: an async function that runs on the loop (it must only await: the delegation to a sub-agent).
- `on_resume`: for a tool that runs a sub-agent: goes on with the sub-agent when the user answered its question (the
  loop hands such an answer to it).
- `capability`: what the call needs of the user who wrote the message, on the call's model (else the session's
  project): the capability of the tool's REST route (viewer_gateway/access.py ROUTE_RULES), default view; None for a
  tool that acts on nothing itself (ask_user, delegate: the sub-agent's calls are checked). agent/acting.py decides.

A tool that fails raises ToolError: its message goes back to the model as the tool's output, and the turn goes on.
`call_service` turns the gateway's business errors (core.errors.ApplicationError) into ToolError; it is the one place
that does."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Protocol

import jsonschema

from accounts_app.roles import Capability
from api.signatures import Signature
from core.errors import ApplicationError


class ToolError(Exception):
    pass


class Suspended(Exception):
    """Raised by a tool whose work waits for the user (a sub-agent's question): the call stays running, the turn
    waits, and the call goes on when the answer comes."""


@dataclass
class ToolResult:
    output: str  # what the model reads
    title: str = ""  # one short line for people
    metadata: dict = field(default_factory=dict)  # the domain result, for the client
    frames: list[tuple[str, dict]] = field(default_factory=list)  # (event, data) published after the tool part


class ToolContext(Protocol):
    """What a tool sees of the turn it runs in (the loop's TurnContext is one). A tool that creates the session's
    model binds it for the rest of the turn by setting model_id."""

    session_id: str
    turn_id: str | None
    project_id: str | None
    model_id: str | None
    subagent_id: str
    signature: Signature  # what the agent's records are signed with (agent on behalf of the user)


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool, as the tool's function sees it."""

    ctx: ToolContext
    arguments: dict
    model_id: str | None = None  # the checked model, for tools that take one

    @property
    def session_id(self) -> str:
        return self.ctx.session_id

    @property
    def project_id(self) -> str | None:
        return self.ctx.project_id

    @property
    def signature(self) -> Signature:
        return self.ctx.signature


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict
    run: Callable | None = None
    suspends_turn: bool = False  # ask_user: the turn waits for the user's answer
    irreversible: bool = False  # runs only after the user allowed this call (or the tool, for the session)
    takes_model: bool = False
    native: bool = False
    on_resume: Callable | None = None  # async (ctx, question) -> Outcome, see the module's doc
    capability: Capability | None = Capability.VIEW

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


MODEL_ID = {"modelId": {"type": "string", "description": "defaults to the session's model; must be a model of the session's project"}}

REGISTRY: dict[str, Tool] = {}


def agent_tool(name: str, description: str, properties: dict | None = None, required: tuple[str, ...] = (), *,
               takes_model: bool = False, irreversible: bool = False, native: bool = False, on_resume: Callable | None = None,
               capability: Capability | None = Capability.VIEW):
    """Declares a tool (see the module's doc)."""

    def register(function):
        if name in REGISTRY:
            raise RuntimeError(f"two tools are named {name}")
        parameters = object_schema({**(MODEL_ID if takes_model else {}), **(properties or {})}, required)
        REGISTRY[name] = Tool(name, description, parameters, function, irreversible=irreversible, takes_model=takes_model, native=native,
                              on_resume=on_resume, capability=capability)
        return function

    return register


def register(tool: Tool) -> Tool:
    REGISTRY[tool.name] = tool
    return tool


def call_service(function, *args, **kwargs):
    """The one bridge from a tool to the gateway's use cases: a business error the service raises (ApplicationError, with
    its envelope code) becomes the ToolError the model reads, including the error list of a validation failure."""
    try:
        return function(*args, **kwargs)
    except ApplicationError as exc:
        detail = exc.message
        if isinstance(exc.data, dict) and exc.data.get("errors"):
            detail += "\n" + json_output(exc.data["errors"][:20])
        raise ToolError(detail) from None


def json_output(payload, limit: int = 12_000) -> str:
    """JSON for the model to read, cut at `limit` characters (a diff or a script can be long)."""
    text = json.dumps(payload, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + f"... [cut: {len(text) - limit} more characters]"


register(Tool(
    name="ask_user",
    description="Ask the user a question and wait for the answer.",
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
    capability=None,
))
