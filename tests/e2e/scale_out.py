"""Several gateway processes on PostgreSQL and Redis, as docs/operations/scaling-out.md describes:
shared by the scale-out test and bench/scale_out.py."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

import psycopg

from tests.e2e.stack import Stack, free_port

ADMIN_DSN = os.environ.get("VIEWER_PG_ADMIN_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("VIEWER_SCALE_REDIS_URL", "redis://127.0.0.1:6379/0")


@contextlib.contextmanager
def temporary_database():
    """A fresh PostgreSQL database for one stack, dropped afterwards; yields its DSN."""
    name = f"scale_{secrets.token_hex(6)}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield ADMIN_DSN.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def start_scale_out(data_dir: Path, pg_dsn: str, *, gateways: int = 2, workers: int = 2, config: dict | None = None) -> tuple[Stack, list[str]]:
    """A stack whose records, task queue and channel layer are shared (PostgreSQL + Redis), with `gateways`
    gateway processes on their own ports and `workers` conversion workers as separate processes. Returns the stack
    and the gateways' base URLs."""
    stack = Stack(data_dir, workers=workers, config={"redisURL": REDIS_URL, "maxStreamsPerClient": 1000, **(config or {})}, env={"VIEWER_PG_DSN": pg_dsn})
    stack.start()
    urls = [stack.url] + [stack.start_gateway(name=f"gateway{index}", port=free_port()) for index in range(1, gateways)]
    return stack, urls
