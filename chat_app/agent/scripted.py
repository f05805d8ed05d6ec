"""The offline model (empty llmAPIKey): a deterministic walkthrough that drives the real tools, so a new user sees the
whole loop without a provider. For each message it:

1. reads the session (session_info);
2. in a cad or cad->ifc project without its model(s), creates them (init_model: the user is asked for permission);
3. reads the model's PARAMS (get_params) and stages one visible change (set_params: one more storey, a longer
   drawing, ...);
4. builds it in the sandbox (run_script: the viewer shows the preview);
5. saves it (save_version: the user is asked for permission; "reject" leaves the change staged).

Every decision is read from the conversation of the current turn (the calls made and their results), so the same
conversation always gives the same next step. It gives no real replies."""

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
# the visible change the walkthrough stages: the first of these PARAMS it finds, and by how much it grows
VISIBLE_CHANGES = (("storeys", 1), ("length", 2.0), ("wall_height", 0.5))


def _pieces(text: str) -> list[str]:
    return re.findall(r"\S+\s*", text)


def _json(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def visible_change(params: dict) -> tuple[str, object, object] | None:
    """(key, old, new) of the change the walkthrough stages: a known size grows, else the first number."""
    numeric = [k for k, v in params.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    for key, step in VISIBLE_CHANGES:
        if key in numeric:
            return key, params[key], params[key] + step
    return (numeric[0], params[numeric[0]], params[numeric[0]] + 1) if numeric else None


def _missing_model(info: dict, created: int) -> bool:
    """A cad project needs its drawing, a cad->ifc project its drawing and its IFC model."""
    kind = (info.get("project") or {}).get("kind")
    formats = [m.get("format") for m in info.get("models", [])]
    needed = {"cad": 1, "cad->ifc": 2}.get(kind, 0)
    return len(formats) + created < needed


class ScriptedModel:
    provider_id = "offline"
    model_id = "walkthrough"

    def __init__(self, piece_delay: float | None = None):
        self.piece_delay = PIECE_DELAY_SECONDS if piece_delay is None else piece_delay

    async def _say(self, text: str) -> AsyncIterator[TextDelta]:
        for piece in _pieces(text):
            await asyncio.sleep(self.piece_delay)
            yield TextDelta(piece)

    def _next(self, user_text: str, done: list[tuple[str, str]]) -> tuple[str, tuple[str, dict] | None]:
        """(what to say, the next call or None) after the calls of this turn so far, (tool, result) in order."""
        if not done:
            return (f"Offline walkthrough (no language model is configured: llmAPIKey is empty), in reply to “{user_text[:80]}”. "
                    "I will show the whole loop with the real tools: read the session, stage a visible change, build it, and ask you before saving. "), ("session_info", {})
        tool, result = done[-1]
        info = _json(done[0][1]) or {}
        if result.startswith(ERROR_PREFIX):
            return f"{tool} did not go through: {result[len(ERROR_PREFIX):]} That ends the walkthrough.", None
        created = sum(1 for name, _ in done if name == "init_model")
        if tool in ("session_info", "init_model") and _missing_model(info, created):
            return "This project has no model for it yet, so I create it from its skeleton. ", ("init_model", {})
        if tool in ("session_info", "init_model"):
            if tool == "session_info" and not info.get("model"):
                return "This session has no model to work on, so the walkthrough ends here. Create a project to see the whole loop.", None
            return "First the build script's parameters. ", ("get_params", {})
        if tool == "get_params":
            params = _json(result) or {}
            change = visible_change(params)
            if change is None:
                return "The build script has no number to change, so the walkthrough ends here.", None
            key, old, new = change
            return f"I stage one visible change: {key} {old} -> {new}. ", ("set_params", {"params": {**params, key: new}, "note": f"offline walkthrough: {key} {old} -> {new}"})
        if tool == "set_params":
            return "Now the sandbox builds the staged script. ", ("run_script", {})
        if tool == "run_script":
            summary = next((line for line in result.splitlines() if line.startswith("Staging diff summary")), "")
            return f"Built. {summary} Saving it makes a new version: you decide. ", ("save_version", {"note": "offline walkthrough"})
        if tool == "save_version":
            version = (_json(result) or {}).get("version", "")
            return f"Saved {version}. That was the whole loop: change, build, look, save. Configure llmAPIKey, llmBaseURL and llmModel for a real assistant.", None
        return "Done.", None

    async def stream(self, messages: list[dict], tools: list[dict]) -> AsyncIterator:
        user_index = max(i for i, m in enumerate(messages) if m["role"] == "user")
        calls = {call["id"]: call["function"]["name"] for m in messages[user_index:] if m["role"] == "assistant" for call in m.get("tool_calls") or []}
        done = [(calls.get(m["tool_call_id"], ""), m["content"]) for m in messages[user_index:] if m["role"] == "tool"]
        text, call = self._next(messages[user_index]["content"], done)
        async for delta in self._say(text):
            yield delta
        if call is not None:
            name, arguments = call
            raw = json.dumps(arguments, ensure_ascii=False)
            yield ToolCallDelta(0, id=f"call_{name}_{len(done)}", name=name, arguments=raw[:20])
            yield ToolCallDelta(0, arguments=raw[20:])
        yield Finish("tool_calls" if call else "stop")
        yield Usage(input=sum(len(str(m.get("content") or "")) for m in messages) // 4, output=len(text) // 4)
