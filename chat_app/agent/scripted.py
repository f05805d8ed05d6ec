"""The offline model (empty llmAPIKey): deterministic, no real replies, but it drives the real turn machinery.

For each user message it streams one text part and calls one tool (session_info); when the message holds a
question word it then asks the user a question (ask_user) and, once answered, says what was answered."""

from __future__ import annotations

import asyncio
import json
import os
import re
from typing import AsyncIterator

from chat_app.agent.chunks import Finish, TextDelta, ToolCallDelta, Usage

QUESTION_WORDS = re.compile(
    r"[?？]|\b(what|which|how|why|when|where|who|should|could|would|can)\b|吗|什么|哪|怎么|为什么|是否",
    re.IGNORECASE,
)
# pause between streamed pieces, so the stream looks like one (VIEWER_OFFLINE_PIECE_SECONDS slows it for demos)
PIECE_DELAY_SECONDS = float(os.environ.get("VIEWER_OFFLINE_PIECE_SECONDS") or 0.03)
ANSWER_RE = re.compile(r'="(.*)"$', re.DOTALL)
OPTIONS = [
    {"label": "Yes", "description": "go ahead"},
    {"label": "No", "description": "leave it as it is"},
]


def _pieces(text: str) -> list[str]:
    return re.findall(r"\S+\s*", text)


class ScriptedModel:
    provider_id = "offline"
    model_id = "scripted"

    def __init__(self, piece_delay: float = PIECE_DELAY_SECONDS):
        self.piece_delay = piece_delay

    async def _say(self, text: str) -> AsyncIterator[TextDelta]:
        for piece in _pieces(text):
            await asyncio.sleep(self.piece_delay)
            yield TextDelta(piece)

    async def stream(self, messages: list[dict], tools: list[dict]) -> AsyncIterator:
        user_index = max(i for i, m in enumerate(messages) if m["role"] == "user")
        user_text = messages[user_index]["content"]
        called = [call["function"]["name"] for m in messages[user_index:] if m["role"] == "assistant" for call in m.get("tool_calls") or []]
        answers = [m["content"] for m in messages[user_index:] if m["role"] == "tool"]
        if not called:
            async for delta in self._say(f"Offline mode: no language model is configured (llmAPIKey is empty), so this is a scripted reply to “{user_text[:80]}”. "):
                yield delta
            yield ToolCallDelta(0, id="call_session_info", name="session_info", arguments="{}")
            yield Finish("tool_calls")
        elif called[-1] == "session_info" and QUESTION_WORDS.search(user_text):
            async for delta in self._say("That sounds like a question, so here is one back."):
                yield delta
            arguments = json.dumps({"question": "Offline mode cannot answer questions. Shall I note it for later?", "header": "Offline mode", "options": OPTIONS})
            yield ToolCallDelta(0, id="call_ask_user", name="ask_user", arguments=arguments[:20])
            yield ToolCallDelta(0, arguments=arguments[20:])
            yield Finish("tool_calls")
        elif called[-1] == "ask_user":
            answered = ANSWER_RE.search(answers[-1])
            async for delta in self._say(f"Noted: {answered.group(1) if answered else answers[-1]}"):
                yield delta
            yield Finish("stop")
        else:
            async for delta in self._say("Configure llmAPIKey, llmBaseURL and llmModel for real answers."):
                yield delta
            yield Finish("stop")
        yield Usage(input=sum(len(str(m.get("content") or "")) for m in messages) // 4, output=20)
