"""Who is working on a record (a conversion, an IDS check, a chat turn): `host:pid:start time` of the process, and
whether that process still lives. On this host the process table says it for sure (a reused pid has another start
time); for another host only the record's heartbeat can tell."""

from __future__ import annotations

import socket

import psutil
from django.utils import timezone


def process_identity() -> str:
    process = psutil.Process()
    return f"{socket.gethostname()}:{process.pid}:{int(process.create_time())}"


def process_alive(identity: str, heartbeat_at, stale_seconds: float) -> bool:
    host, _, rest = identity.partition(":")
    pid, _, started = rest.partition(":")
    if host == socket.gethostname() and pid.isdigit():
        try:
            return int(psutil.Process(int(pid)).create_time()) == int(started or 0)
        except psutil.NoSuchProcess:
            return False
    return heartbeat_at is not None and (timezone.now() - heartbeat_at).total_seconds() < stale_seconds
