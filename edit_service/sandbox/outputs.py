"""Inside the sandbox: sends the run's result files to the host over the file descriptor it passed in, and ends the
run once nobody reads them any more.

Frames: one JSON header line {"name": ..., "size": n} followed by n bytes, per file. The sandbox has no writable
host mount, so this is the only way results leave it; the host writes the files itself (regular files by
construction) and caps the total size."""

import json
import os
import select
import signal
import stat
import threading

READER_GONE = 99  # exit code of a run ended because the service that started it is gone


def end_with_the_reader(fd: int) -> None:
    """Ends the run and every process it started once the read end of its outputs is closed: the service that
    started it died. bubblewrap binds a sandbox to its starter only after setting it up, so a service killed during
    that left the run going with no time limit (containers/bubblewrap#633; docs/operations/sandbox-isolation.md).
    Looked at once before the run's own code, then watched from a thread. Example, first thing of an entry point:

        end_with_the_reader(outputs_fd)
    """
    watched = os.dup(fd)  # its own descriptor: send() closes fd when it is done
    poller = select.poll()
    poller.register(watched, 0)  # a pipe's write end reports POLLERR once no read end is open
    if poller.poll(0):
        _end_everything()

    def watch() -> None:
        poller.poll()
        _end_everything()

    threading.Thread(target=watch, name="end-with-the-reader", daemon=True).start()


def _end_everything() -> None:
    try:
        os.kill(-1, signal.SIGKILL)  # every other process of the sandbox (one uid, its own pid namespace); never its pid 1
    except ProcessLookupError:  # there was none
        pass
    os._exit(READER_GONE)


def send(fd: int, names: list[str]) -> None:
    with os.fdopen(fd, "wb", closefd=True) as channel:
        for name in names:
            descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(descriptor, "rb") as source:
                info = os.fstat(source.fileno())
                if not stat.S_ISREG(info.st_mode):
                    raise OSError(f"{name} is not a regular file")
                channel.write(json.dumps({"name": name, "size": info.st_size}).encode() + b"\n")
                while chunk := source.read(1 << 20):
                    channel.write(chunk)
