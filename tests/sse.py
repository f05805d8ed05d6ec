"""A Server-Sent Events client for tests: reads a stream in a thread and keeps every frame and comment."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass

import requests


@dataclass
class Frame:
    id: int | None
    event: str
    data: dict | str


class SSEStream:
    def __init__(self, url: str, *, headers: dict | None = None, last_event_id: int | str | None = None, timeout: float = 120):
        self.url = url
        self.headers = dict(headers or {})
        if last_event_id is not None:
            self.headers["Last-Event-ID"] = str(last_event_id)
        self.frames: list[Frame] = []
        self.comments: list[str] = []
        self.status: int | None = None
        self.response_headers: dict = {}
        self.error: BaseException | None = None
        self._response = None
        self._opened = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(timeout,), daemon=True)

    def start(self) -> "SSEStream":
        self._thread.start()
        assert self._opened.wait(30), "the stream did not open"
        return self

    def _read(self, timeout: float) -> None:
        try:
            with requests.get(self.url, headers=self.headers, stream=True, timeout=timeout) as response:
                self._response = response
                self.status, self.response_headers = response.status_code, dict(response.headers)
                self._opened.set()
                if response.status_code != 200:
                    self.frames.append(Frame(None, "http-error", response.json()))
                    return
                fields: dict[str, str] = {}
                for line in response.iter_lines(decode_unicode=True):
                    if line == "":
                        if "event" in fields or "data" in fields:
                            data = fields.get("data", "")
                            try:
                                data = json.loads(data)
                            except ValueError:
                                pass
                            self.frames.append(Frame(int(fields["id"]) if fields.get("id", "").isdigit() else None, fields.get("event", "message"), data))
                        fields = {}
                    elif line.startswith(":"):
                        self.comments.append(line[1:].strip())
                    else:
                        name, _, value = line.partition(":")
                        value = value[1:] if value.startswith(" ") else value
                        fields[name] = fields[name] + "\n" + value if name == "data" and name in fields else value
        except BaseException as exc:  # noqa: BLE001 - closing the stream ends the read with an error
            self.error = exc
        finally:
            self._opened.set()

    def wait_for(self, predicate, timeout: float = 30) -> Frame:
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            frames = list(self.frames)
            for frame in frames[seen:]:
                if predicate(frame):
                    return frame
            seen = len(frames)
            time.sleep(0.02)
        raise TimeoutError(f"no matching frame within {timeout} s; got {[f.event for f in self.frames][-30:]}")

    def wait_event(self, event: str, timeout: float = 30, after: int | None = None) -> Frame:
        """The first frame of that event (with an id above `after`, when given)."""
        return self.wait_for(lambda f: f.event == event and (after is None or (f.id or 0) > after), timeout)

    def close(self) -> None:
        if self._response is not None:
            # closing the response does not wake the reader thread blocked in recv(); shutting the socket down does
            connection = getattr(self._response.raw, "_connection", None)
            sock = getattr(connection, "sock", None)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self._response.close()
        self._thread.join(timeout=5)
        assert not self._thread.is_alive(), f"the stream reader of {self.url} did not stop"
