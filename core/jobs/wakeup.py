"""Waking idle workers of a queue when one of its tasks is enqueued, on this host: each worker binds a UNIX datagram
socket in the queue's folder under the data directory's run/ folder (0700, the service user's alone), and an enqueue,
once its transaction commits, sends a byte to every socket there. Only a shortcut: workers still poll the queue every
interval (workers on other hosts, a lost byte), and nothing here may block or fail an enqueue."""

from __future__ import annotations

import logging
import os
import secrets
import select
import socket
import time
from pathlib import Path

from django.conf import settings

logger = logging.getLogger(__name__)

_MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the terminating NUL


def wakeup_dir(queue: str) -> Path:
    return Path(settings.DATA_DIR) / "run" / f"wake-{queue}"


def wake(queue: str) -> None:
    """Sends a wake-up to every worker listening on the queue. A socket whose worker died without removing it
    (SIGKILL) refuses the byte and is removed; one whose worker has wake-ups pending already is full and skipped."""
    folder = wakeup_dir(queue)
    try:
        names = [entry.name for entry in os.scandir(folder)]
        folder_fd = os.open(folder, os.O_PATH | os.O_DIRECTORY)
    except OSError:
        return  # no worker ever listened here
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
            for name in names:
                try:
                    sender.sendto(b"\0", socket.MSG_DONTWAIT, _socket_address(folder, folder_fd, name))
                except (ConnectionRefusedError, FileNotFoundError):
                    (folder / name).unlink(missing_ok=True)
                except OSError:
                    pass  # full, or anything else: that worker finds the task at its next poll
    finally:
        os.close(folder_fd)


def _socket_address(folder: Path, folder_fd: int, name: str) -> str:
    """The socket's path, or when that is too long for a socket address (a deep data directory), the same file
    reached through the folder's open descriptor (/proc/self/fd/N/name), which the kernel resolves."""
    path = str(folder / name)
    return path if len(os.fsencode(path)) <= _MAX_SOCKET_PATH else f"/proc/self/fd/{folder_fd}/{name}"


class WakeUp:
    """A worker's end: wait(timeout) returns at the first wake-up or after timeout. Without a socket (the folder
    cannot be made) it just sleeps, and the worker polls as before."""

    def __init__(self, queue: str):
        self.path: Path | None = None
        self._socket: socket.socket | None = None
        folder = wakeup_dir(queue)
        name = secrets.token_hex(4)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            folder_fd = os.open(folder, os.O_PATH | os.O_DIRECTORY)
            try:
                listener.bind(_socket_address(folder, folder_fd, name))
            finally:
                os.close(folder_fd)
        except OSError as exc:
            listener.close()
            logger.warning("no wake-ups for queue %s (%s); polling only", queue, exc)
            return
        path = folder / name
        listener.setblocking(False)
        self.path, self._socket = path, listener

    def wait(self, timeout: float) -> bool:
        """Waits up to timeout for a wake-up; returns whether one came. Wake-ups that came while the worker was
        busy count too: they cost one needless poll, while dropping them could drop one meant for this wait."""
        if self._socket is None:
            time.sleep(timeout)
            return False
        readable, _, _ = select.select([self._socket], [], [], timeout)
        if not readable:
            return False
        try:
            while self._socket.recv(64):
                pass
        except BlockingIOError:
            pass
        return True

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self.path.unlink(missing_ok=True)
            self._socket = None
