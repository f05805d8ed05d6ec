"""A Server-Sent Events client for tests: reads a stream in a thread and keeps every frame and comment.

The stream runs on an http.client connection the client opens itself, so close() can shut its own socket down:
the reader thread's blocking read then returns at once."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from requests.structures import CaseInsensitiveDict


def _json_or_text(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass
class Frame:
    id: int | None
    event: str
    data: dict | str
    received: float = field(default=0.0, compare=False, repr=False)  # time.perf_counter() when the frame was read


class SSEStream:
    def __init__(self, url: str, *, headers: dict | None = None, last_event_id: int | str | None = None, timeout: float = 120):
        self.url = url
        self.headers = dict(headers or {})
        if last_event_id is not None:
            self.headers["Last-Event-ID"] = str(last_event_id)
        self.frames: list[Frame] = []
        self.comments: list[str] = []
        self.status: int | None = None
        self.response_headers: CaseInsensitiveDict = CaseInsensitiveDict()  # names as any server cases them
        self.error: BaseException | None = None
        self._sock: socket.socket | None = None
        self._opened = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(timeout,), daemon=True)

    def start(self) -> "SSEStream":
        self._thread.start()
        assert self._opened.wait(30), "the stream did not open"
        return self

    def _connection(self, timeout: float) -> tuple[http.client.HTTPConnection, str]:
        parts = urlsplit(self.url)
        kind = {"http": http.client.HTTPConnection, "https": http.client.HTTPSConnection}[parts.scheme]
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return kind(parts.hostname, parts.port, timeout=timeout), target

    def _read(self, timeout: float) -> None:
        connection = None
        try:
            connection, target = self._connection(timeout)
            connection.connect()
            self._sock = connection.sock  # ours: close() shuts it down (the connection may drop its reference later)
            connection.request("GET", target, headers={"Accept": "text/event-stream", **self.headers})
            response = connection.getresponse()
            self.status = response.status
            self.response_headers = CaseInsensitiveDict()
            for name, value in response.getheaders():
                self.response_headers[name] = f"{self.response_headers[name]}, {value}" if name in self.response_headers else value
            self._opened.set()
            if response.status != 200:
                self.frames.append(Frame(None, "http-error", _json_or_text(response.read().decode("utf-8", "replace"))))
                return
            fields: dict[str, str] = {}
            while True:
                raw = response.readline()
                if not raw:  # the server ended the stream, or close() shut the socket down
                    return
                line = raw.decode("utf-8")
                line = line[:-1] if line.endswith("\n") else line
                line = line[:-1] if line.endswith("\r") else line
                if line == "":
                    if "event" in fields or "data" in fields:
                        frame_id = int(fields["id"]) if fields.get("id", "").isdigit() else None
                        self.frames.append(Frame(frame_id, fields.get("event", "message"), _json_or_text(fields.get("data", "")), time.perf_counter()))
                    fields = {}
                elif line.startswith(":"):
                    self.comments.append(line[1:].strip())
                else:
                    name, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    fields[name] = fields[name] + "\n" + value if name == "data" and name in fields else value
        except BaseException as exc:  # noqa: BLE001 - closing the stream may end the read with an error
            self.error = exc
        finally:
            if connection is not None:
                connection.close()
            self._opened.set()

    def wait_for(self, predicate, timeout: float = 30, since: int = 0) -> Frame:
        """The first frame matching `predicate` among those received from index `since` on."""
        deadline = time.monotonic() + timeout
        seen = since
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
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # the reader's blocking recv() returns at once
            except OSError:  # already closed by the reader (the stream had ended)
                pass
        self._thread.join(timeout=5)
        assert not self._thread.is_alive(), f"the stream reader of {self.url} did not stop"
