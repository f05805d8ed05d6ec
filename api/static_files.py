"""Serving files from the data directory with HTTP Range (206/416), ETag and Last-Modified, streamed.

A model's outputs (metadata.json and render.json: a tenth of their size gzipped; model.xkt, written unzipped by the
converter: a fifth) go gzip-compressed to a client that accepts it and asks for the whole file. The compressed copy
is made at the first such request and kept beside the file (name.gz, with the file's modification time, so a
republished file gets a fresh copy)."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import threading
from pathlib import Path

from django.http import FileResponse, HttpResponse, HttpResponseNotModified
from django.utils.http import http_date, parse_http_date_safe

RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")
CHUNK = 256 * 1024
COMPRESSIBLE = {".json", ".xkt"}
GZIP_LEVEL = 6


def _etag(stat: os.stat_result, suffix: str = "") -> str:
    return f'"{stat.st_size:x}-{stat.st_mtime_ns:x}{suffix}"'


def _accepts_gzip(header: str) -> bool:
    for item in header.split(","):
        coding, _, params = item.strip().partition(";")
        if coding.strip().lower() == "gzip":
            quality = params.strip().lower().removeprefix("q=")
            try:
                return not params.strip() or float(quality) > 0
            except ValueError:
                return False
    return False


def _gzipped_copy(handle, path: Path, stat: os.stat_result):
    """An open handle on the gzip copy of the open file `handle` (made now if missing or stale), or None when it
    cannot be written (the folder moved to the trash meanwhile, a full disk): the file is then served as it is."""
    copy = path.with_name(path.name + ".gz")
    try:
        cached = open(copy, "rb")
    except FileNotFoundError:
        cached = None
    if cached is not None:
        if os.fstat(cached.fileno()).st_mtime_ns == stat.st_mtime_ns:
            return cached
        cached.close()
    partial = path.with_name(f".{copy.name}-{os.getpid()}-{threading.get_ident()}")
    try:
        with open(partial, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL, mtime=0) as packed:
            shutil.copyfileobj(handle, packed, CHUNK)
        os.utime(partial, ns=(stat.st_mtime_ns, stat.st_mtime_ns))
        cached = open(partial, "rb")
        os.replace(partial, copy)
        return cached
    except OSError:
        partial.unlink(missing_ok=True)
        return None
    finally:
        handle.seek(0)


# Positions longer than this are beyond any file (and int() refuses strings of thousands of digits).
MAX_POSITION_DIGITS = 18


def _position(digits: str) -> int:
    return int(digits) if len(digits) <= MAX_POSITION_DIGITS else 10**MAX_POSITION_DIGITS


def _byte_range(header: str, size: int) -> tuple[int, int] | None | bool:
    """(start, end) inclusive; None = no usable single range (serve whole); False = unsatisfiable."""
    match = RANGE_RE.match(header.strip())
    if not match:
        return None  # malformed or multi-range: RFC 9110 allows ignoring the header
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:
        length = _position(last)
        if length == 0:
            return False
        return max(0, size - length), size - 1
    start = _position(first)
    end = min(_position(last), size - 1) if last else size - 1
    if start >= size or (last and _position(last) < start):
        return False
    return start, end


class _RangeFile:
    """A file object limited to [start, end], so FileResponse streams exactly that slice."""

    def __init__(self, handle, start: int, end: int):
        self.handle = handle
        self.remaining = end - start + 1
        handle.seek(start)

    def read(self, size: int = -1) -> bytes:
        if self.remaining <= 0:
            return b""
        size = self.remaining if size < 0 else min(size, self.remaining)
        data = self.handle.read(size)
        self.remaining -= len(data)
        return data

    def close(self):
        self.handle.close()


def serve_file(request, path: Path, content_type: str) -> HttpResponse:
    handle = open(path, "rb")
    stat = os.fstat(handle.fileno())
    etag = _etag(stat)
    headers = {"ETag": etag, "Last-Modified": http_date(stat.st_mtime), "Accept-Ranges": "bytes", "Cache-Control": "no-cache"}
    if path.suffix in COMPRESSIBLE:
        headers["Vary"] = "Accept-Encoding"
        if not request.headers.get("Range") and _accepts_gzip(request.headers.get("Accept-Encoding") or ""):
            packed = _gzipped_copy(handle, path, stat)
            if packed is not None:
                handle.close()
                # the gzip copy is another representation of the same file: its own ETag, and no ranges of it
                etag = _etag(stat, "-gz")
                handle, stat = packed, os.fstat(packed.fileno())
                headers.update({"ETag": etag, "Content-Encoding": "gzip", "Accept-Ranges": "none"})

    if_none_match = request.headers.get("If-None-Match")
    since = parse_http_date_safe(request.headers.get("If-Modified-Since") or "")
    # If-None-Match compares weakly (RFC 9110 13.1.2): a W/ prefix a cache added still names this representation
    if (if_none_match and (if_none_match.strip() == "*" or etag in [t.strip().removeprefix("W/") for t in if_none_match.split(",")])) or (
        not if_none_match and since is not None and int(stat.st_mtime) <= since
    ):
        handle.close()
        response = HttpResponseNotModified()
        for key, value in headers.items():
            response[key] = value
        return response

    byte_range = None
    range_header = request.headers.get("Range")
    if_range = request.headers.get("If-Range")
    if range_header and (not if_range or if_range.strip() == etag):
        byte_range = _byte_range(range_header, stat.st_size)
    if byte_range is False:
        handle.close()
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{stat.st_size}"
        for key, value in headers.items():
            response[key] = value
        return response

    if byte_range:
        start, end = byte_range
        response = FileResponse(_RangeFile(handle, start, end), status=206, content_type=content_type, filename=path.name)
        response.block_size = CHUNK
        response["Content-Range"] = f"bytes {start}-{end}/{stat.st_size}"
        response["Content-Length"] = str(end - start + 1)
    else:
        response = FileResponse(handle, content_type=content_type, filename=path.name)
        response.block_size = CHUNK
        response["Content-Length"] = str(stat.st_size)
    for key, value in headers.items():
        response[key] = value
    return response
