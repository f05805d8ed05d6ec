"""A clash run ends once nobody reads its progress: the worker that started it died (bubblewrap binds a sandbox to
its starter only once it is set up, containers/bubblewrap#633). The run's heartbeat finds the broken pipe at its
next beat while the engine is busy (here a sleep, which gives up the interpreter lock as the engine's native calls do
once they return)."""

import os
import subprocess
import sys

from coordination_app.run_child import READER_GONE
from sandboxing.limits import PROJECT_ROOT
from tests.processes import read_line, spawn, stop

BUSY_RUN = """
import time
from coordination_app.run_child import Heartbeat
with Heartbeat("clashing"):
    time.sleep(600)  # stands for the engine, deep in one pair
"""


def test_a_run_whose_progress_reader_is_gone_ends_at_its_next_beat():
    run = spawn([sys.executable, "-c", BUSY_RUN], stdout=subprocess.PIPE, text=True,
                env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    try:
        assert '"phase": "clashing"' in read_line(run.stdout, timeout=60)
        run.stdout.close()  # the reader's end: the only one
        assert run.wait(timeout=10) == READER_GONE
    finally:
        stop(run)
