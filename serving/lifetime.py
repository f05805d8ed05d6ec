"""Opt-in: the process ends when the process that started it dies, even by SIGKILL (Linux PR_SET_PDEATHSIG).

Set DIE_WITH_PARENT=1 in the environment of a service started by a supervisor that may be killed hard (the test
suite does). Off by default: the kernel ties the signal to the parent *thread*, and a supervisor that starts
children from a short-lived thread would take them down with that thread.
"""

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent_if_asked() -> None:
    if os.environ.get("DIE_WITH_PARENT") != "1":
        return
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        return
    if os.getppid() == 1:  # the parent died before the signal was armed
        os.kill(os.getpid(), signal.SIGTERM)
