"""Idle workers are woken when a task of their queue is enqueued (core.jobs.wakeup): real `manage.py
conversion_worker` processes polling every 30 s take a queued conversion long before their next poll; and the
sockets' bookkeeping: a dead worker's socket is removed, a queue without listeners costs nothing."""

from __future__ import annotations

import sqlite3
import time
from datetime import datetime

import pytest

from core.jobs.queues import CHECK_QUEUE, CONVERSION_QUEUE
from core.jobs.wakeup import WakeUp, wake, wakeup_dir
from tests.e2e.stack import Stack
from tests.helpers import MINIMAL_IFC, poll

POLL_INTERVAL = 30


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path


def test_a_listener_is_woken_by_its_queue_only(data_dir):
    listener = WakeUp(CHECK_QUEUE)
    try:
        assert listener.path.parent == data_dir / "run" / f"wake-{CHECK_QUEUE}"
        assert (listener.path.parent.stat().st_mode & 0o777) == 0o700
        wake(CONVERSION_QUEUE)
        assert not listener.wait(0)
        wake(CHECK_QUEUE)
        wake(CHECK_QUEUE)
        assert listener.wait(0)
        assert not listener.wait(0)  # both bytes were taken by the one wake-up
    finally:
        listener.close()
    assert not listener.path.exists()


def test_waking_a_queue_without_workers_does_nothing(data_dir):
    wake(CHECK_QUEUE)
    assert not wakeup_dir(CHECK_QUEUE).exists()


def test_the_socket_of_a_dead_worker_is_removed_and_the_others_still_woken(data_dir):
    alive, dead = WakeUp(CHECK_QUEUE), WakeUp(CHECK_QUEUE)
    try:
        dead._socket.close()  # what SIGKILL leaves: the socket's file, nobody bound to it
        wake(CHECK_QUEUE)
        assert not dead.path.exists()
        assert alive.wait(0)
    finally:
        alive.close()


def test_a_data_directory_too_deep_for_a_socket_address_still_wakes_its_workers(settings, tmp_path):
    settings.DATA_DIR = tmp_path / ("x" * 120)
    alive, dead = WakeUp(CHECK_QUEUE), WakeUp(CHECK_QUEUE)
    try:
        assert len(str(alive.path)) > 108 and alive.path.exists()  # longer than sun_path: bound through the folder
        dead._socket.close()
        wake(CHECK_QUEUE)
        assert alive.wait(0)
        assert not dead.path.exists()
    finally:
        alive.close()
    assert not alive.path.exists()


def test_a_folder_that_cannot_be_made_means_polling_only(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    (tmp_path / "run").write_text("")  # a file where the folder of the sockets would go
    listener = WakeUp(CHECK_QUEUE)
    assert listener.path is None
    wake(CHECK_QUEUE)
    assert not listener.wait(0)


def enqueued_and_started(stack: Stack) -> list[tuple[datetime, datetime | None]]:
    with sqlite3.connect(stack.data_dir / "viewer.sqlite3") as database:
        rows = database.execute("SELECT enqueued_at, started_at FROM django_tasks_database_dbtaskresult ORDER BY enqueued_at").fetchall()
    return [(datetime.fromisoformat(enqueued), started and datetime.fromisoformat(started)) for enqueued, started in rows]


@pytest.mark.e2e
def test_idle_workers_take_a_new_task_long_before_their_next_poll(tmp_path, settings):
    converter = tmp_path / "converter" / "hang.mjs"  # a conversion that never ends keeps its worker busy
    converter.parent.mkdir()
    converter.write_text("setInterval(() => {}, 1000);\n")
    data = tmp_path / "data"
    data.mkdir()
    stack = Stack(data, workers=0, config={"converterScript": str(converter), "conversionTimeoutSeconds": 3600})
    sockets = data / "run" / f"wake-{CONVERSION_QUEUE}"
    try:
        stack.migrate()
        stack.start_gateway()
        for name in ("worker0", "worker1"):
            stack._spawn(name, "manage.py", "conversion_worker", "--interval", str(POLL_INTERVAL), "--recovery-interval", "600")
        poll(lambda: len(list(sockets.iterdir())) if sockets.exists() else 0, lambda count: count == 2, timeout=120)
        time.sleep(1)  # each worker polls the empty queue right after binding its socket: now both wait out the interval
        for taken in (1, 2):  # the second is taken by the worker still idle, the first one's is busy converting
            stack.api("POST", "/api/v1/models", files={"file": ("tiny.ifc", MINIMAL_IFC)}).raise_for_status()
            tasks = poll(lambda: enqueued_and_started(stack), lambda tasks: len(tasks) == taken and all(started for _, started in tasks),  # noqa: B023
                         timeout=POLL_INTERVAL * 2)
            enqueued, started = tasks[-1]
            # a worker not woken would take it at its next poll, up to POLL_INTERVAL - 1 s after the enqueue
            assert (started - enqueued).total_seconds() < POLL_INTERVAL / 3
    finally:
        stack.stop()
    # a worker removes its socket when it stops; one that had to be killed (busy with a conversion that never ends, past
    # the stop's grace period) leaves it, and the next enqueue's wake-up removes it
    settings.DATA_DIR = data
    wake(CONVERSION_QUEUE)
    assert not list(sockets.iterdir())
