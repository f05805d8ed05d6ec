"""The offline model (empty llmAPIKey). It answers a message with a plain note, and calls no tool: no language model
is configured, how an administrator sets one, and that nothing was changed.

One message asks for something else: the demonstration, asked for by name. A message that is just "demo" or "run
the demo" (any case; spaces around it and a final "." or "!" do not count) drives the real tools, on a copy of the
session's model, never on the model itself:

1. reads the session (session_info); the demonstration needs a session of an ifc project bound to its model, and
   elsewhere it says so and stops;
2. copies the model (demo_copy, offline_demo.py: a new model of the project built from the model's current script;
   the user is asked for permission);
3. reads the copy's PARAMS (get_params) and stages one visible change on it (set_params: one more storey, ...);
4. builds it in the sandbox (run_script: the viewer shows the copy's preview);
5. saves the copy (save_version: the user is asked for permission; "reject" leaves the copy's change staged).

Every decision is read from the conversation of the current turn (the calls made and their results), so the same
conversation always gives the same next step."""

from __future__ import annotations

import asyncio
import json
import os
import re
from typing import AsyncIterator

from chat_app.agent.chunks import Finish, TextDelta, ToolCallDelta, Usage

# pause between streamed pieces, so the stream looks like one (VIEWER_OFFLINE_PIECE_SECONDS slows it for demos)
PIECE_DELAY_SECONDS = float(os.environ.get("VIEWER_OFFLINE_PIECE_SECONDS") or 0.03)
ERROR_PREFIX = "Error: "
DEMO_REQUESTS = ("demo", "run the demo")
# the visible change the demonstration stages: the first of these PARAMS it finds, and by how much it grows
VISIBLE_CHANGES = (("storeys", 1), ("length", 2.0), ("wall_height", 0.5))

OFFLINE_NOTE = (
    "**No language model is configured**, so this chat cannot answer questions or act on them, and nothing was "
    "changed. An administrator sets one in `server_config.json`: `llmAPIKey` (the provider's key), `llmBaseURL` "
    "(an OpenAI-compatible endpoint, e.g. `https://api.openai.com/v1`; empty for OpenAI itself) and `llmModel`, then "
    "restarts the gateway (see Operations › Configuration in the documentation).\n\n"
    "To see the agent's tools at work without one, send **demo**: it works on a copy of this project's model and "
    "asks before it creates or saves anything."
)
DEMO_INTRO = ("Offline demonstration (no language model is configured). I work on a copy of this session's model, "
              "never on the model itself: copy it, stage a visible change on the copy, build it, and ask you before saving. ")
DEMO_NEEDS_IFC_PROJECT = ("The demonstration copies the model of an ifc project, and this session has none, so it ends "
                          "here and nothing was changed. Open the chat of an ifc project (New project) and send **demo** there.")


def _pieces(text: str) -> list[str]:
    return re.findall(r"\S+\s*", text)


def _json(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def is_demo_request(text: str) -> bool:
    """The message asks for the demonstration by name (see the module's doc)."""
    return text.strip().rstrip(".!").strip().lower() in DEMO_REQUESTS


def visible_change(params: dict) -> tuple[str, object, object] | None:
    """(key, old, new) of the change the demonstration stages: a known size grows, else the first number."""
    numeric = [k for k, v in params.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    for key, step in VISIBLE_CHANGES:
        if key in numeric:
            return key, params[key], params[key] + step
    return (numeric[0], params[numeric[0]], params[numeric[0]] + 1) if numeric else None


def demonstration_step(done: list[tuple[str, str]]) -> tuple[str, tuple[str, dict] | None]:
    """(what to say, the next call or None) after the demonstration's calls so far, (tool, result) in order."""
    if not done:
        return DEMO_INTRO, ("session_info", {})
    tool, result = done[-1]
    if result.startswith(ERROR_PREFIX):
        return f"{tool} did not go through: {result[len(ERROR_PREFIX):]} That ends the demonstration.", None
    if tool == "session_info":
        info = _json(result) or {}
        if (info.get("project") or {}).get("kind") != "ifc" or not info.get("model"):
            return DEMO_NEEDS_IFC_PROJECT, None
        return f"First a copy of {info['model'].get('name', 'the model')} to work on. ", ("demo_copy", {})
    copy = next(((_json(output) or {}).get("modelId") for name, output in done if name == "demo_copy"), None)
    if not copy:  # no copy to work on (an interrupted call): every later call without a modelId would reach the model itself
        return "The copy was not made. That ends the demonstration; your model is as it was.", None
    on_copy = {"modelId": copy}
    if tool == "demo_copy":
        return f"The copy is {copy}. Its build script's parameters: ", ("get_params", on_copy)
    if tool == "get_params":
        params = _json(result) or {}
        change = visible_change(params)
        if change is None:
            return "The build script has no number to change, so the demonstration ends here.", None
        key, old, new = change
        return f"I stage one visible change on the copy: {key} {old} -> {new}. ", (
            "set_params", {**on_copy, "params": {**params, key: new}, "note": f"offline demo: {key} {old} -> {new}"})
    if tool == "set_params":
        return "Now the sandbox builds the copy's staged script. ", ("run_script", on_copy)
    if tool == "run_script":
        summary = next((line for line in result.splitlines() if line.startswith("Staging diff summary")), "")
        return f"Built. {summary} Saving it makes a new version of the copy: you decide. ", ("save_version", {**on_copy, "note": "offline demo"})
    if tool == "save_version":
        version = (_json(result) or {}).get("version", "")
        return (f"Saved the copy's {version}. That was the whole loop: change, build, look, save; your own model is as "
                "it was. Configure llmAPIKey, llmBaseURL and llmModel for a real assistant."), None
    return "Done.", None


class ScriptedModel:
    provider_id = "offline"
    model_id = "offline"

    def __init__(self, piece_delay: float | None = None):
        self.piece_delay = PIECE_DELAY_SECONDS if piece_delay is None else piece_delay

    async def _say(self, text: str) -> AsyncIterator[TextDelta]:
        for piece in _pieces(text):
            await asyncio.sleep(self.piece_delay)
            yield TextDelta(piece)

    async def stream(self, messages: list[dict], tools: list[dict]) -> AsyncIterator:
        user_index = max(i for i, m in enumerate(messages) if m["role"] == "user")
        calls = {call["id"]: call["function"]["name"] for m in messages[user_index:] if m["role"] == "assistant" for call in m.get("tool_calls") or []}
        done = [(calls.get(m["tool_call_id"], ""), m["content"]) for m in messages[user_index:] if m["role"] == "tool"]
        if is_demo_request(messages[user_index]["content"] or ""):
            text, call = demonstration_step(done)
        else:
            text, call = OFFLINE_NOTE, None
        async for delta in self._say(text):
            yield delta
        if call is not None:
            name, arguments = call
            raw = json.dumps(arguments, ensure_ascii=False)
            yield ToolCallDelta(0, id=f"call_{name}_{len(done)}", name=name, arguments=raw[:20])
            yield ToolCallDelta(0, arguments=raw[20:])
        yield Finish("tool_calls" if call else "stop")
        yield Usage(input=sum(len(str(m.get("content") or "")) for m in messages) // 4, output=len(text) // 4)
