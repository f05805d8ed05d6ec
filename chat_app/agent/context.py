"""The context budget: what a model step is sent fits `llmContextTokens`, however long the session gets.

Token counts are estimated (tiktoken needs its encodings from the network at first use, so it is not used): an ASCII
character counts 1/3.5 token, any other character a whole token, each message 4 more. For English text and JSON that
is a little more than real tokenizers count (cl100k and o200k average about 4 ASCII characters a token), and for CJK
text about the same, so the estimate errs on the safe side; the provider's own count comes back in each step's usage.

Before every step of the main agent:
- a tool output longer than an eighth of the budget is cut (the model can always call the tool again, narrower);
- when the history passes COMPACT_AT of the budget, the turns before the last KEEP_TURNS are compacted: their messages
  are marked compacted (they stay in GET messages) and one compaction message summarises them. The summary is built
  from the records, without a model call, so it never fails and never overflows. The current turn, with any question
  it waits on, is always kept verbatim."""

from __future__ import annotations

import json
import math
import re

from django.conf import settings
from django.db import transaction

from chat_app.models import ChatSession, Message, Part
from chat_app.parts import new_part, now_ms

ASCII_CHARS_PER_TOKEN = 3.5
MESSAGE_OVERHEAD_TOKENS = 4
COMPACT_AT = 0.75
KEEP_TURNS = 2
SUMMARY_LINE_CHARS = 300
NON_ASCII = re.compile(r"[^\x00-\x7f]")


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    other = len(NON_ASCII.findall(text))
    return math.ceil((len(text) - other) / ASCII_CHARS_PER_TOKEN + other)


def message_tokens(message: dict) -> int:
    calls = json.dumps(message["tool_calls"]) if message.get("tool_calls") else ""
    return MESSAGE_OVERHEAD_TOKENS + estimate_tokens(message.get("content") or "") + estimate_tokens(calls)


def request_tokens(messages: list[dict], tools: list[dict]) -> int:
    return sum(message_tokens(m) for m in messages) + estimate_tokens(json.dumps(tools))


def budget() -> int:
    """Tokens a request may take: the context window less room for the answer."""
    window = settings.VIEWER.llmContextTokens
    return window - min(4096, window // 4)


def cut_text(text: str, max_tokens: int) -> str:
    if estimate_tokens(text) <= max_tokens:
        return text
    keep = int(max_tokens * ASCII_CHARS_PER_TOKEN * 0.9)
    while keep > 0 and estimate_tokens(text[:keep]) > max_tokens:
        keep //= 2
    return text[:keep] + f"\n... [cut to fit the context budget: {len(text) - keep} more characters; ask for less at once]"


def cut_tool_outputs(history: list[dict], max_tokens: int) -> list[dict]:
    return [{**m, "content": cut_text(m["content"], max_tokens)} if m["role"] == "tool" else m for m in history]


# --- compaction --------------------------------------------------------------------------------------------------


def _turn_starts(messages: list[Message]) -> list[int]:
    """Indexes of the messages that open a turn (the user's messages of the main agent)."""
    return [i for i, m in enumerate(messages) if m.role == Message.Role.USER and not m.subagent_id]


def _summary_lines(messages: list[Message]) -> list[str]:
    lines = []
    for message in messages:
        parts = [p.data for p in message.parts.all()]
        if any(p["type"] == "compaction" for p in parts):
            lines += [f"(earlier) {line}" for line in next(p for p in parts if p["type"] == "compaction")["text"].splitlines()[1:]]
            continue
        text = " ".join("".join(p.get("text", "") for p in parts if p["type"] == "text").split())
        if message.role == Message.Role.USER:
            lines.append(f"- User: {text[:SUMMARY_LINE_CHARS]}")
            continue
        calls = [f"{p['tool']} -> {p['state'].get('title') or p['state'].get('error', p['state']['status'])}"[:120] for p in parts if p["type"] == "tool"]
        if calls:
            lines.append(f"  - Tools: {'; '.join(calls)}")
        if text:
            lines.append(f"  - Assistant: {text[:SUMMARY_LINE_CHARS]}")
    return lines


def _id_before(message_id: str) -> str:
    """The id that sorts right before a message's (its 20 hex digits less one): the summary goes between the
    compacted messages and the kept ones."""
    number = int(message_id[4:], 16) - 1
    while Message.objects.filter(pk=f"msg_{number:020x}").exists():
        number -= 1
    return f"msg_{number:020x}"


@transaction.atomic
def compact(session_id: str, turn_id: str | None, keep_turns: int) -> bool:
    """Compacts the main agent's turns before the last `keep_turns` into one compaction message; False when there
    is nothing to compact."""
    messages = list(Message.objects.filter(session_id=session_id, subagent_id="", compacted=False).order_by("id").prefetch_related("parts"))
    starts = _turn_starts(messages)
    if len(starts) <= keep_turns:
        return False
    first_kept = messages[starts[-keep_turns]]
    old = messages[:starts[-keep_turns]]
    lines = _summary_lines(old)
    summary_budget = budget() // 4
    while lines and estimate_tokens("\n".join(lines)) > summary_budget:
        lines = lines[len(lines) // 4 + 1:]
    text = f"Summary of the earlier conversation ({len(old)} messages compacted to stay within the context budget; the records are kept):\n" + "\n".join(lines)
    message_id = _id_before(first_kept.id)
    created = now_ms()
    info = {"id": message_id, "sessionID": session_id, "role": "assistant", "agent": "compaction", "summary": True, "time": {"created": created, "completed": created},
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}, "cost": 0}
    summary = Message.objects.create(id=message_id, session_id=session_id, turn_id=turn_id, role=Message.Role.ASSISTANT, info=info)
    part = new_part(session_id, message_id, "compaction", text=text, compacted={"from": old[0].id, "to": old[-1].id, "messages": len(old)},
                    time={"start": created, "end": created})
    Part.objects.create(id=part["id"], message=summary, type="compaction", data=part)
    Message.objects.filter(session_id=session_id, id__lte=old[-1].id, compacted=False).exclude(pk=message_id).update(compacted=True)
    return True


def fitted_history(session_id: str, turn_id: str | None, system_prompt: str, tools: list[dict], build_history) -> tuple[list[dict], bool]:
    """The history to send, within the budget (compacting when it passes COMPACT_AT); True when it compacted."""
    limit = budget()
    max_output = max(500, limit // 8)

    def assembled() -> list[dict]:
        history = cut_tool_outputs(build_history(session_id), max_output)
        return ([{"role": "system", "content": system_prompt}] if system_prompt else []) + history

    history = assembled()
    compacted = False
    for keep in (KEEP_TURNS, 1):
        if request_tokens(history, tools) <= limit * COMPACT_AT:
            break
        if compact(session_id, turn_id, keep):
            compacted = True
            history = assembled()
    if request_tokens(history, tools) > limit:  # the current turn alone is too big: its tool outputs get shorter
        history = cut_tool_outputs(history, max(200, limit // 32))
    return history, compacted


def record_usage(session_id: str, tokens: dict, cost: float) -> None:
    with transaction.atomic():
        session = ChatSession.objects.select_for_update().get(pk=session_id)
        usage = dict(session.usage or {})
        for key, value in (("input", tokens["input"]), ("output", tokens["output"]), ("reasoning", tokens["reasoning"]), ("cacheRead", tokens["cache"]["read"])):
            usage[key] = usage.get(key, 0) + value
        usage["cost"] = round(usage.get("cost", 0) + cost, 6)
        usage["steps"] = usage.get("steps", 0) + 1
        session.usage = usage
        session.save(update_fields=["usage"])


def cost_of(tokens: dict) -> float:
    """Dollars (or whatever the prices are in) of one step, from the configured prices per million tokens; 0 without
    prices. Cached input tokens cost llmPricePerMTokCachedIn (default: the input price); reasoning is part of output."""
    config = settings.VIEWER
    cached_price = config.llmPricePerMTokCachedIn or config.llmPricePerMTokIn
    return round((tokens["input"] * config.llmPricePerMTokIn + tokens["cache"]["read"] * cached_price + tokens["output"] * config.llmPricePerMTokOut) / 1e6, 6)
