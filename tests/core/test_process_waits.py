"""tests.processes.still_running: how the tests wait for processes they did not start (a killed worker's sandboxes)
to end."""

import subprocess

import psutil

from tests.processes import still_running


def test_a_running_process_is_still_running_and_a_zombie_has_ended():
    child = subprocess.Popen(["sleep", "60"])
    try:
        process = psutil.Process(child.pid)
        assert still_running([process], timeout=0.2) == [process]
        child.kill()  # not reaped yet: a zombie
        assert still_running([process], timeout=10) == []
    finally:
        child.kill()
        child.wait()


def test_a_pid_now_held_by_another_process_is_not_taken_for_the_one_that_ended():
    child = subprocess.Popen(["sleep", "60"])
    process = psutil.Process(child.pid)
    child.kill()
    child.wait()
    # the kernel handing the pid out again is what happened in a full run; its effect is a Process object whose pid
    # answers with another start time, made here by moving the recorded one
    other = subprocess.Popen(["sleep", "60"])
    try:
        reused = psutil.Process(other.pid)
        reused._ident = (reused.pid, reused._ident[1] - 1000)  # psutil's identity of a process: (pid, start time)
        assert psutil.wait_procs([reused], timeout=0.2)[1] == [reused]  # what the tests used before took it for alive
        assert still_running([reused], timeout=0.2) == []
    finally:
        other.kill()
        other.wait()
    assert still_running([process], timeout=0.2) == []
