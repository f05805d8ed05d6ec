"""The zygote's own side of the protocol in sandboxing/zygote.py, shared by the conversion zygote
(models_app/conversion/zygote.py) and the check zygote (checks_app/engine/zygote.py). It runs inside the sandbox, so
it imports nothing but the standard library (python_command binds this package read-only next to the zygote's).

`serve` takes one job at a time: a JSON message with its named descriptors attached, forks a child that runs the
zygote's `child(job, fds)` (which never returns), answers {"forked": pid}, waits for the child and answers
{"exited": pid, "status": code} (a negative code is the signal that killed it). The zygote starts no thread (fork
keeps only the forking thread) and never touches a job's files."""

from __future__ import annotations

import ctypes
import errno
import json
import mmap
import os
import re
import socket
import sys
import traceback
from typing import Callable, NoReturn

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
MESSAGE_BYTES = 4096
GO = b"g"  # the worker has moved the child into its cgroup: the child may read its input
NO_GO_EXIT_CODE = 3  # the worker gave the child up before its go: it ends without reading anything
MADV_POPULATE_WRITE = 23  # Linux 5.14: fault the range in writable (copy-on-write pages copied)
PAGE_PRESENT = 1 << 63  # of a /proc/PID/pagemap entry
COPY_CHUNK_BYTES = 2 * 1024 * 1024
PAGEMAP_WINDOW_PAGES = 65536  # 512 KB of /proc/PID/pagemap (256 MB of memory) read at a time


_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def prctl(option: int, value: int) -> None:
    _LIBC.prctl(option, value, 0, 0, 0)


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


def await_go(job: dict, fds: dict[str, int], stdout: str) -> None:
    """The start of a child: it dies with the zygote, writes stdout to the descriptor named `stdout` and stderr to
    "stderr", waits on "go" until the worker has moved it into its cgroup (exits 3 when the worker gave up), then
    caps its CPU time (job["cpu_seconds"]) and, without a cgroup, its address space (job["memory_bytes"])."""
    import signal

    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.dup2(fds["stderr"], 2)
    os.dup2(fds[stdout], 1)
    if os.read(fds["go"], 1) != GO:  # the worker gave up before moving this child into its cgroup
        os._exit(NO_GO_EXIT_CODE)
    cap_self(job)


def copy_shared_memory(budget_bytes: int, interrupted: Callable[[], bool] = lambda: False) -> int:
    """Copies now the pages a forked child still shares with its zygote, so that its job does not pay a
    copy-on-write fault on each page it first writes (the reference counts of every object it touches: 12-16 ms of
    a 60 ms IDS check). Only private writable mappings, only the pages present (never new memory), and nothing when
    they come to more than budget_bytes (the child's memory cap must leave its job room). Stops between chunks of
    COPY_CHUNK_BYTES (~1 ms each) once interrupted() says so: the job has come. Returns the bytes copied; 0 where the
    kernel cannot (before Linux 5.14, or /proc unreadable)."""
    if interrupted():  # a child forked for a waiting job: nothing to copy ahead
        return 0
    runs = _present_runs(budget_bytes)
    copied = 0
    for address, size in runs or ():
        for offset in range(0, size, COPY_CHUNK_BYTES):
            if interrupted():
                return copied
            chunk = min(COPY_CHUNK_BYTES, size - offset)
            if _LIBC.madvise(address + offset, chunk, MADV_POPULATE_WRITE) == 0:
                copied += chunk
            elif ctypes.get_errno() == errno.EINVAL:  # a kernel before 5.14: nothing can be copied
                return copied
    return copied


def populate_write_supported() -> bool:
    """Whether this kernel has MADV_POPULATE_WRITE (Linux 5.14), asked of one new page of this process's own."""
    page = mmap.mmap(-1, mmap.PAGESIZE)
    return _LIBC.madvise(ctypes.addressof(ctypes.c_char.from_buffer(page)), mmap.PAGESIZE, MADV_POPULATE_WRITE) == 0


def _present_runs(budget_bytes: int) -> list[tuple[int, int]] | None:
    """(address, bytes) of each run of present pages in this process's private writable mappings, read from its page
    map; None when they come to more than budget_bytes, or /proc cannot be read."""
    page = os.sysconf("SC_PAGE_SIZE")
    runs, present_bytes = [], 0
    try:
        with open("/proc/self/maps") as maps, open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
            regions = [line.split(maxsplit=2)[:2] for line in maps]
            for bounds, permissions in regions:
                if permissions != "rw-p":
                    continue
                start, end = (int(bound, 16) for bound in bounds.split("-"))
                for window in range(start, end, PAGEMAP_WINDOW_PAGES * page):  # a huge reservation read piece by piece
                    pagemap.seek(window // page * 8)
                    present = pagemap.read(min(PAGEMAP_WINDOW_PAGES, (end - window) // page) * 8)[7::8].translate(_PRESENT_FLAGS)
                    found = [(window + run.start() * page, (run.end() - run.start()) * page) for run in re.finditer(rb"\x01+", present)]
                    runs += found
                    present_bytes += sum(size for _, size in found)
                    if present_bytes > budget_bytes:
                        return None
    except OSError:
        return None
    return runs


_PRESENT_FLAGS = bytes(1 if byte & (PAGE_PRESENT >> 56) else 0 for byte in range(256))  # little-endian: bit 63 in byte 7


def cap_self(job: dict) -> None:
    """Caps the calling child's CPU time (job["cpu_seconds"]) and, without a cgroup, its address space
    (job["memory_bytes"]); 0 or absent: no cap."""
    import resource

    if job.get("cpu_seconds"):
        resource.setrlimit(resource.RLIMIT_CPU, (job["cpu_seconds"], job["cpu_seconds"]))
    if job.get("memory_bytes"):  # no cgroup (the operator's choice): a per-process cap at least
        resource.setrlimit(resource.RLIMIT_AS, (job["memory_bytes"], job["memory_bytes"]))


def run_child(job: dict, fds: dict[str, int], stdout: str, work: Callable[[], int]) -> NoReturn:
    """A forked child's whole life: await_go, then work(), whose return is the exit code (see exit_after)."""

    def life() -> int:
        await_go(job, fds, stdout)
        return work()

    exit_after(life)


def exit_after(life: Callable[[], int]) -> NoReturn:
    """Runs a forked child's life(), whose return is the exit code; whatever it raises goes to stderr (the worker's
    error tail) with exit code 1; then flushes and ends the process without unwinding the zygote's state. Never
    returns."""
    code = 1
    try:
        code = life()
    except BaseException:  # noqa: BLE001 - everything goes to the worker as the error tail
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
