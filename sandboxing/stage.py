"""One confined stage seen from the host: the file descriptors it is handed, its progress lines (relayed through a
bounded queue) and the tail of its error output (read by two threads), and a sandboxed process killed with
everything in its cgroup when its deadline passes. Used by conversions and IDS checks alike."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from typing import Callable

from sandboxing.cgroups import RunCgroup

PIPE_READ_BYTES = 65536
ERROR_TAIL_BYTES = 2048


class StageTimeout(Exception):
    """The stage did not finish before its deadline; it has been killed."""


def keep_tail(stream, tail: bytearray) -> None:
    """Reads a stream to its end, keeping only its last bytes (for the error message)."""
    with stream:
        while chunk := stream.read1(PIPE_READ_BYTES):
            tail += chunk
            del tail[:-ERROR_TAIL_BYTES]


def _pump(stream, lines: queue.Queue) -> None:
    # bounded lines and a bounded queue: a child that floods stdout (web-ifc logs every token it cannot parse) is
    # slowed down by the full pipe instead of filling the host's memory
    with stream:
        while line := stream.readline(PIPE_READ_BYTES):
            lines.put(line)
    lines.put(None)  # end of output: the process is exiting


class StageOutput:
    """A stage's progress lines and the tail of its error output."""

    def __init__(self, progress, stderr):
        self.lines: queue.Queue = queue.Queue(maxsize=1000)
        self.stderr_tail = bytearray()
        self.readers = [
            threading.Thread(target=_pump, args=(progress, self.lines), daemon=True),
            threading.Thread(target=keep_tail, args=(stderr, self.stderr_tail), daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    def relay(self, deadline: float, on_line: Callable[[str], bool | None]) -> bool:
        """Relays lines until the stage closes its output (False), or until on_line answers True for a line (True);
        queue.Empty at the deadline."""
        while (line := self.lines.get(timeout=max(0.0, deadline - time.monotonic()))) is not None:
            if on_line(line):
                return True
        return False

    def drain(self) -> None:
        """Lets both readers reach the end of their pipes (call once the stage's processes are gone)."""
        while self.readers[0].is_alive():  # a full queue would keep the progress reader from reaching the end
            try:
                self.lines.get(timeout=0.1)
            except queue.Empty:
                pass
        for reader in self.readers:
            reader.join(timeout=5)

    def error(self, name: str, code: int) -> str:
        tail = self.stderr_tail.decode("utf-8", "replace").strip() or f"{name} exited with code {code}"
        if code < 0:
            tail += f"\n({name} killed by signal {-code})"
        return tail[-ERROR_TAIL_BYTES:]


class Descriptors:
    """File descriptors handed to a stage: closed here once the stage has its own copies (or on any failure)."""

    def __init__(self):
        self.fds: list[int] = []

    def add(self, fd: int) -> int:
        self.fds.append(fd)
        return fd

    def pipe(self) -> tuple[int, int]:
        read, write = os.pipe()
        return self.add(read), self.add(write)

    def close_all(self, keep: int | None = None) -> None:
        for fd in [fd for fd in self.fds if fd != keep]:
            os.close(fd)
            self.fds.remove(fd)

    def __enter__(self) -> "Descriptors":
        return self

    def __exit__(self, *exc) -> None:
        self.close_all()


class ConfinedProcess:
    """A stage's process (argv: a bwrap chain from sandboxing.bwrap.limited), started at once in its own session
    with `pass_fds`; its stdout carries progress lines, its stderr the error output."""

    def __init__(self, argv: list[str], *, env: dict[str, str], pass_fds: tuple[int, ...]):
        self.process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            pass_fds=pass_fds, env=env,
        )
        self.output = StageOutput(self.process.stdout, self.process.stderr)

    def finish(self, deadline: float, on_line: Callable[[str], None], cgroup: RunCgroup | None) -> int:
        """Relays progress until the process ends; its exit code. StageTimeout (after killing it) at the deadline."""
        try:
            self.output.relay(deadline, on_line)
            self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except (queue.Empty, subprocess.TimeoutExpired):
            raise StageTimeout() from None
        finally:
            if self.process.poll() is None:
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                if cgroup is not None:
                    cgroup.kill_all()
                self.process.wait()
            self.output.drain()
        return self.process.returncode
