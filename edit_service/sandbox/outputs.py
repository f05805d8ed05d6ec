"""Inside the sandbox: sends the run's result files to the host over the file descriptor it passed in.

Frames: one JSON header line {"name": ..., "size": n} followed by n bytes, per file. The sandbox has no writable
host mount, so this is the only way results leave it; the host writes the files itself (regular files by
construction) and caps the total size."""

import json
import os
import stat


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
