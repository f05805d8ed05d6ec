"""A local OpenAI-compatible server for tests: every POST /v1/chat/completions gets the next scripted reply,
streamed as chat.completion.chunk events, with optional pauses, a hold until released, a mid-stream error, or an
HTTP error. Request bodies are recorded, so tests can check what the model was sent. Optionally it has a context
window of its own (`context_limit_chars`: a request whose messages are longer is refused like a real provider
refuses one past its window), and a reply may report its own usage (cached and reasoning tokens)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    steps: list[tuple] = field(default_factory=list)
    status: int = 200
    error_body: dict | None = None
    usage: dict | None = None  # the usage chunk's "usage" (default: 11 prompt, 7 completion tokens)

    def text(self, text: str, pieces: int = 3) -> "Reply":
        size = max(1, len(text) // pieces + 1)
        self.steps += [("delta", {"content": text[i:i + size]}) for i in range(0, len(text), size)]
        return self

    def reasoning(self, text: str) -> "Reply":
        self.steps.append(("delta", {"reasoning_content": text}))
        return self

    def tool(self, name: str, arguments: dict | str, *, index: int = 0, call_id: str | None = None, split: int = 3) -> "Reply":
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        size = max(1, len(raw) // split + 1)
        pieces = [raw[i:i + size] for i in range(0, len(raw), size)] or [""]
        first = {"index": index, "id": call_id or f"call_{name}_{index}", "type": "function", "function": {"name": name, "arguments": ""}}
        self.steps.append(("delta", {"tool_calls": [first]}))
        self.steps += [("delta", {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}) for piece in pieces]
        return self

    def pause(self, seconds: float) -> "Reply":
        self.steps.append(("sleep", seconds))
        return self

    def hold(self) -> "Reply":
        """Stops streaming until FakeOpenAI.release() (or 60 s)."""
        self.steps.append(("hold",))
        return self

    def fail_mid_stream(self, message: str) -> "Reply":
        self.steps.append(("error", message))
        return self


class FakeOpenAI:
    def __init__(self, context_limit_chars: int | None = None):
        self.replies: list[Reply] = []
        self.requests: list[dict] = []
        self.released = threading.Event()
        self.context_limit_chars = context_limit_chars
        self.refused_for_length = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                started = time.perf_counter()
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                record = {"path": self.path, "auth": self.headers.get("Authorization"), "body": body, "seconds": None}
                fake.requests.append(record)
                try:
                    self._answer(body)
                finally:
                    record["seconds"] = time.perf_counter() - started  # the provider's own time for this request

            def _answer(self, body):
                length = sum(len(str(m.get("content") or "")) + len(json.dumps(m.get("tool_calls") or "")) for m in body.get("messages", []))
                if fake.context_limit_chars is not None and length > fake.context_limit_chars:
                    fake.refused_for_length += 1
                    reply = Reply(status=400, error_body={"error": {"message": f"This model's maximum context length is exceeded ({length} characters)", "type": "invalid_request_error", "code": "context_length_exceeded"}})
                else:
                    reply = fake.replies.pop(0) if fake.replies else Reply().text("(no scripted reply left)")
                if reply.status != 200:
                    payload = json.dumps(reply.error_body or {"error": {"message": "scripted failure", "type": "server_error"}}).encode()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                finish = "stop"
                try:
                    for step in reply.steps:
                        if step[0] == "delta":
                            if "tool_calls" in step[1]:
                                finish = "tool_calls"
                            self._chunk({"index": 0, "delta": step[1], "finish_reason": None})
                        elif step[0] == "sleep":
                            time.sleep(step[1])
                        elif step[0] == "hold":
                            fake.released.wait(60)
                        elif step[0] == "error":
                            self._send({"error": {"message": step[1], "type": "server_error"}})
                            return
                    self._chunk({"index": 0, "delta": {}, "finish_reason": finish})
                    self._send({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": body.get("model", ""), "choices": [],
                                "usage": reply.usage or {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    fake.disconnected += 1
                self.close_connection = True

            def _chunk(self, choice: dict):
                self._send({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "fake", "choices": [choice]})

            def _send(self, payload: dict):
                self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
                self.wfile.flush()

            def log_message(self, *args):
                pass

        self.disconnected = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def release(self) -> None:
        self.released.set()

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()
