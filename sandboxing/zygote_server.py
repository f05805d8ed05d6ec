"""The zygote's own side of the protocol in sandboxing/zygote.py, shared by the conversion zygote
(models_app/conversion/zygote.py) and the check zygote (checks_app/engine/zygote.py). It runs inside the sandbox, so
it imports nothing but the standard library (python_command binds this package read-only next to the zygote's).

`serve` takes one job at a time: a JSON message with its named descriptors attached, forks a child that runs the
zygote's `child(job, fds)` (which never returns), answers {"forked": pid}, waits for the child and answers
{"exited": pid, "status": code} (a negative code is the signal that killed it). The zygote starts no thread (fork
keeps only the forking thread) and never touches a job's files."""

from __future__ import annotations

import ctypes
import json
import os
import socket
from typing import Callable

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
MESSAGE_BYTES = 4096
GO = b"g"  # the worker has moved the child into its cgroup: the child may read its input


def prctl(option: int, value: int) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def send(control: socket.socket, message: dict) -> None:
    control.send(json.dumps(message).encode())


def serve(control: socket.socket, child: Callable[[dict, dict[str, int]], None], max_fds: int) -> None:
    """Forks `child` for each job until the worker closes the socket."""
    while True:
        message, fds, _, _ = socket.recv_fds(control, MESSAGE_BYTES, max_fds)
        if not message:
            return  # the worker is gone
        job = json.loads(message)
        named = dict(zip(job["fds"], fds))
        pid = os.fork()
        if pid == 0:
            control.close()
            child(job, named)
        for fd in fds:
            os.close(fd)
        send(control, {"forked": pid})
        _, status = os.waitpid(pid, 0)
        send(control, {"exited": pid, "status": os.waitstatus_to_exitcode(status)})
