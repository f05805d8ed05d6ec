"""Atomic files: readers see the old file or the new one, never a partial one, and a published file survives a crash.

The idiom is always the same: write a temporary file in the target's folder, fsync it, rename it over the target,
fsync the folder. Published files are only ever replaced by rename, never rewritten in place, which is what makes
hard links between them safe. Django-free: the gateway and the edit service both use it.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import tempfile
from pathlib import Path

# a hard link is impossible here (another filesystem, links refused or not supported, too many links): copy instead
_CANNOT_LINK = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EOPNOTSUPP}


def fsync_dir(folder: Path) -> None:
    """Makes a rename or a new name in `folder` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_path_beside(target: Path, suffix: str = ".tmp") -> Path:
    """A new, empty, private file in the target's folder (so that renaming it over the target is atomic)."""
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    return Path(name)


def publish_file(source: Path, target: Path) -> None:
    """Moves a finished file into place (same filesystem)."""
    with open(source, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(source, target)
    fsync_dir(target.parent)


def write_atomic(path: Path, data: bytes | str) -> None:
    """Writes `data` (text as UTF-8) to `path`. The folder must exist: nothing here creates folders (FileNotFoundError
    when it is gone), so a folder deleted meanwhile is never brought back. No temporary file is left on failure."""
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def link_or_copy(source: Path, target: Path) -> None:
    """A hard link to `source` at the new name `target` (this exact file, even if the source name is replaced
    meanwhile), or a copy where no link can be made. FileNotFoundError when the source is missing."""
    try:
        os.link(source, target)
    except OSError as exc:
        if exc.errno not in _CANNOT_LINK:
            raise
        shutil.copyfile(source, target)


def place_file(source: Path, target: Path, *, keep_source: bool) -> None:
    """Puts an existing file at `target`: a hard link (or copy) when the source stays, else a rename. Never use it to
    hand a file to a sandbox run folder: the sandbox could write through the link."""
    if not keep_source:
        publish_file(source, target)
        return
    temp = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
    try:
        link_or_copy(source, temp)
        publish_file(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def create_once(path: Path, text: str) -> None:
    """Creates `path` (mode 0600) holding `text`, unless it exists. Processes starting together may race: each writes
    its own private temporary file and links it into place; a link fails when the name exists, so the first one
    wins and the file appears complete or not at all."""
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temp, path)
        except FileExistsError:
            return  # another process came first: its file stands
    finally:
        os.unlink(temp)
    fsync_dir(path.parent)
