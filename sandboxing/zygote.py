"""The worker's side of a sandboxed zygote, shared by the conversions' ifcopenshell stage (models_app/conversion) and
the IDS checks (checks_app/engine): a long-lived Python started in bubblewrap (python_command, the stage's rlimits,
the seccomp filter, no cgroup of its own) that imports the heavy libraries once and forks one child per job.

The worker talks to it over a Unix seqpacket socket: it waits for {"ready": pid}, sends a job as one JSON message
with its descriptors attached (SCM_RIGHTS) and reads {"forked": pid} (the child's pid in the sandbox's pid
namespace, which `fork` turns into the host pid that a cgroup join needs) and {"exited": pid, "status": code}.
A subclass names the zygote's module and package and the errors its callers expect (their texts are its own)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from typing import Callable, ClassVar, Generic, TypeVar

import psutil

from sandboxing import bwrap, seccomp
from sandboxing.limits import StageLimits, python_command
from sandboxing.stage import ERROR_TAIL_BYTES, keep_tail

START_SECONDS = 120  # importing the libraries; starting the zygote is not a job's time


def namespace_pid(pid: int) -> int | None:
    """A process's pid in its innermost pid namespace (the last NSpid entry)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return next((int(line.split()[-1]) for line in status if line.startswith("NSpid:")), None)
    except (OSError, ValueError):
        return None


def _children(pid: int) -> list[int] | None:
    """The host pids of a process's children, from /proc/<pid>/task/<tid>/children; None where the kernel has no
    such file (CONFIG_PROC_CHILDREN) or the process is gone."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        found = []
        for task in tasks:
            with open(f"/proc/{pid}/task/{task}/children") as children:
                found += [int(child) for child in children.read().split()]
        return found
    except (OSError, ValueError):
        return None


def descendant_host_pid(root: int, ns_pid: int) -> int | None:
    """The host pid of the descendant of `root` whose innermost pid is ns_pid. Walks the children files (a few small
    reads down the sandbox's short chain: bwrap, its pid 1, the zygote); where they cannot be read, psutil's walk,
    which reads every process of the host (tens of milliseconds on a busy machine)."""
    level = [root]
    while level:
        below = []
        for pid in level:
            children = _children(pid)
            if children is None:
                return next((p.pid for p in psutil.Process(root).children(recursive=True) if namespace_pid(p.pid) == ns_pid), None)
            below += children
        for pid in below:
            if namespace_pid(pid) == ns_pid:
                return pid
        level = below
    return None


class SandboxedZygote:
    """The sandboxed fork server of one worker process; started on first use (under `lock`), again if it died."""

    module: ClassVar[str]  # run as `python -m module --control-fd N`
    package: ClassVar[str]  # the project package the sandbox may import (besides this one, for zygote_server)
    failures: ClassVar[tuple[type[Exception], ...]]  # what start_failed, timed_out and ended raise

    def __init__(self, limits: StageLimits):
        self.limits = limits
        self.process: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.stderr_tail = bytearray()
        self.lock = threading.Lock()

    # --- the caller's errors ------------------------------------------------------------------------------------

    def start_failed(self, exc: OSError) -> Exception:
        raise NotImplementedError

    def not_started(self, exc: Exception) -> Exception:
        raise NotImplementedError

    def timed_out(self) -> Exception:
        raise NotImplementedError

    def ended(self, error: OSError | None, tail: str) -> Exception:
        raise NotImplementedError

    def child_not_found(self) -> Exception:
        raise NotImplementedError

    def check_isolation(self) -> None:
        """Raises when the sandbox cannot run here (a caller that checked before starts without it)."""

    # --- the protocol -------------------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        self.check_isolation()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = python_command(self.limits, ["-m", self.module, "--control-fd", str(theirs.fileno())], packages=(self.package, "sandboxing"))
        seccomp_fd = seccomp.program_fd()
        argv, chain_env = bwrap.limited(command, rlimits=self.limits.rlimits(), cgroup=None, seccomp_fd=seccomp_fd)
        self.stderr_tail = bytearray()
        try:
            self.process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                pass_fds=(theirs.fileno(), seccomp_fd), env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **chain_env},
            )
        except OSError as exc:
            ours.close()
            raise self.start_failed(exc) from None
        finally:
            theirs.close()
            os.close(seccomp_fd)
        self.control = ours
        threading.Thread(target=keep_tail, args=(self.process.stderr, self.stderr_tail), daemon=True).start()
        try:
            self.expect("ready", time.monotonic() + START_SECONDS)
        except self.failures as exc:
            self.stop()
            raise self.not_started(exc) from None

    def expect(self, key: str, deadline: float):
        """The value of the next message carrying `key` (the whole message for "exited"; a late answer about an
        earlier child is skipped)."""
        while True:
            message = self._receive(deadline)
            if key in message:
                return message if key == "exited" else message[key]

    def _receive(self, deadline: float) -> dict:
        self.control.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            message = self.control.recv(4096)
        except TimeoutError:
            raise self.timed_out() from None
        except OSError as exc:
            message, error = b"", exc
        else:
            error = None
        if not message:
            if self.process is not None:
                self.process.wait(timeout=10)
            tail = self.stderr_tail.decode("utf-8", "replace").strip()
            raise self.ended(error, tail[-ERROR_TAIL_BYTES:] or "no error output")
        return json.loads(message)

    def fork(self, job: dict, fds: dict[str, int], deadline: float) -> tuple[int, int]:
        """Sends a job with its named descriptors; returns the child's (namespace pid, host pid)."""
        socket.send_fds(self.control, [json.dumps({**job, "fds": list(fds)}).encode()], list(fds.values()))
        ns_pid = self.expect("forked", deadline)
        host_pid = descendant_host_pid(self.process.pid, ns_pid)
        if host_pid is None:
            raise self.child_not_found()
        return ns_pid, host_pid

    def stop(self) -> None:
        if self.control is not None:
            self.control.close()
            self.control = None
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
            self.process = None


Z = TypeVar("Z", bound=SandboxedZygote)


class ZygotePool(Generic[Z]):
    """One zygote per set of limits in a worker process."""

    def __init__(self, make: Callable[[StageLimits], Z]):
        self.make = make
        self.zygotes: dict[StageLimits, Z] = {}
        self.lock = threading.Lock()

    def get(self, limits: StageLimits) -> Z:
        with self.lock:
            return self.zygotes.setdefault(limits, self.make(limits))
