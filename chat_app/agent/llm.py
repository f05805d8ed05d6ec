"""The OpenAI-compatible language model: streaming chat completions with tool calls through the `openai` package,
turned into the chunks of chunks.py. Retries and timeouts are explicit; provider errors surface as exceptions the
turn turns into session.error (see describe_error)."""

from __future__ import annotations

from typing import AsyncIterator

import openai

from chat_app.agent.chunks import Finish, ReasoningDelta, TextDelta, ToolCallDelta, Usage

MAX_RETRIES = 2  # connection errors, 408/409/429/5xx, before the stream starts
CONNECT_TIMEOUT_SECONDS = 10
READ_TIMEOUT_SECONDS = 120  # between two chunks of a stream


class OpenAICompatibleModel:
    provider_id = "openai-compatible"

    def __init__(self, *, api_key: str, base_url: str = "", model: str = ""):
        self.model_id = model or "gpt-4o-mini"
        self.client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url or None,
            max_retries=MAX_RETRIES,
            timeout=openai.Timeout(READ_TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS),
        )

    async def stream(self, messages: list[dict], tools: list[dict]) -> AsyncIterator:
        request = {"model": self.model_id, "messages": messages, "stream": True, "stream_options": {"include_usage": True}}
        if tools:
            request["tools"] = tools
        stream = await self.client.chat.completions.create(**request)
        try:
            async for chunk in stream:
                for item in _chunks(chunk):
                    yield item
        finally:
            await stream.close()  # an abort closes the HTTP response at once


def _chunks(chunk) -> list:
    found = []
    if getattr(chunk, "usage", None):
        usage = chunk.usage
        details = getattr(usage, "completion_tokens_details", None)
        prompt_details = getattr(usage, "prompt_tokens_details", None)
        found.append(Usage(input=usage.prompt_tokens or 0, output=usage.completion_tokens or 0, reasoning=getattr(details, "reasoning_tokens", 0) or 0,
                           cached=getattr(prompt_details, "cached_tokens", 0) or 0))
    for choice in chunk.choices or ():
        delta = choice.delta
        if delta is not None:
            reasoning = getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)  # DeepSeek / Qwen style servers
            if reasoning:
                found.append(ReasoningDelta(reasoning))
            if delta.content:
                found.append(TextDelta(delta.content))
            for position, call in enumerate(delta.tool_calls or ()):
                function = call.function
                found.append(ToolCallDelta(
                    index=call.index if call.index is not None else position,
                    id=call.id,
                    name=function.name if function else None,
                    arguments=(function.arguments or "") if function else "",
                ))
        if choice.finish_reason:
            found.append(Finish(choice.finish_reason))
    return found


def describe_provider_error(exc: Exception) -> dict | None:
    """A provider failure in the assistant-error form {name, data: {message, statusCode?, isRetryable?}}; None
    when the exception is not the provider's."""
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return {"name": "ProviderAuthError", "data": {"message": f"the language model provider refused the credentials (HTTP {exc.status_code}): {_message(exc)}"}}
    if isinstance(exc, openai.APIStatusError):
        body = _message(exc)
        if exc.status_code == 400 and "context" in body.lower():
            return {"name": "ContextOverflowError", "data": {"message": body, "statusCode": 400}}
        retryable = exc.status_code in (408, 409, 429) or exc.status_code >= 500
        return {"name": "APIError", "data": {"message": f"the language model provider answered HTTP {exc.status_code}: {body}", "statusCode": exc.status_code, "isRetryable": retryable}}
    if isinstance(exc, openai.APITimeoutError):
        return {"name": "APIError", "data": {"message": "the language model provider did not answer in time", "isRetryable": True}}
    if isinstance(exc, openai.APIConnectionError):
        return {"name": "APIError", "data": {"message": f"the language model provider is unreachable: {exc}", "isRetryable": True}}
    if isinstance(exc, openai.APIError):
        return {"name": "APIError", "data": {"message": f"the language model stream failed: {_message(exc)}", "isRetryable": False}}
    return None


def _message(exc) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", "") or exc)
