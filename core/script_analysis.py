"""Parsing and analysing a user's build script, never in the calling process: every call runs in a warm child
interpreter (modules pre-imported) whose address space may grow by at most `memory_mb` and whose answer must come
within `seconds`, else the child is killed and the call refused ("too complex to analyse"). Scripts over
`script_max_kb` are refused before anything is parsed. A dead or bloated child is replaced; nothing ever falls back
to parsing in-process.

Both the edit service (libcst and ast: contract, PARAMS, call-site rewrite, script map, diffs) and the gateway (PARAMS
of a script an agent stages) use it; see docs/operations/sandbox-limits.md.

Wire format between parent and child: a 4-byte big-endian length, then JSON. Request {"call": "module:function",
"args": [...]}; answer {"result": ...} | {"rejected": detail} (the function raised an error carrying .detail) |
{"exhausted": true} (MemoryError, RecursionError) | {"failed": text}.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import resource
import select
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil

MEGABYTE = 1024 * 1024
INSTALL_ROOT = Path(__file__).resolve().parents[1]
HEADER = struct.Struct(">I")
PARAMS_NAME = "PARAMS"
STARTUP_SECONDS = 60


class ScriptAnalysisError(Exception):
    """A script refused: too large, too complex for the child's caps, or rejected by the analysis itself."""

    def __init__(self, detail):
        super().__init__(detail if isinstance(detail, str) else json.dumps(detail))
        self.detail = detail


@dataclass(frozen=True)
class AnalysisLimits:
    script_max_kb: int = 256
    memory_mb: int = 512  # growth of the child's address space beyond its warm baseline
    seconds: float = 20
    workers: int = 2

    @classmethod
    def from_environment(cls, environ=os.environ) -> AnalysisLimits:
        def number(name, default, kind=int):
            raw = environ.get(name)
            return kind(raw) if raw else default

        return cls(
            script_max_kb=number("SCRIPT_MAX_KB", 256),
            memory_mb=number("SCRIPT_ANALYSIS_MEMORY_MB", 512),
            seconds=number("SCRIPT_ANALYSIS_SECONDS", 20.0, float),
            workers=number("SCRIPT_ANALYSIS_WORKERS", 2),
        )

    def check_size(self, script: str) -> None:
        size = len(script.encode("utf-8", "surrogatepass"))
        if size > self.script_max_kb * 1024:
            raise ScriptAnalysisError(f"the script is {size / 1024:,.0f} KB; scripts may be at most {self.script_max_kb} KB")

    @property
    def too_complex(self) -> str:
        return f"the script is too complex to analyse within {self.memory_mb} MB / {self.seconds:g} s"


class _ChildGone(Exception):
    pass


class _Child:
    """One warm analysis interpreter; requests one at a time."""

    def __init__(self, modules: tuple[str, ...], memory_mb: int):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "core.script_analysis", str(memory_mb), *modules],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=INSTALL_ROOT,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(INSTALL_ROOT), "LANG": "C.UTF-8",
                 "PYTHONDONTWRITEBYTECODE": "1"},
        )
        try:  # the imports: a new child is ready when it says so
            deadline = time.monotonic() + STARTUP_SECONDS
            self._read(HEADER.unpack(self._read(HEADER.size, deadline))[0], deadline)
        except _ChildGone:
            self.stop()
            raise ScriptAnalysisError("the script analysis is unavailable: its process did not start") from None

    def request(self, payload: bytes, deadline: float) -> dict:
        try:
            self.process.stdin.write(HEADER.pack(len(payload)) + payload)
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise _ChildGone() from None
        size = HEADER.unpack(self._read(HEADER.size, deadline))[0]
        return json.loads(self._read(size, deadline))

    def _read(self, size: int, deadline: float) -> bytes:
        chunks, missing, fd = [], size, self.process.stdout.fileno()
        while missing:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise _ChildGone()
            chunk = os.read(fd, min(missing, 1 << 20))
            if not chunk:
                raise _ChildGone()
            chunks.append(chunk)
            missing -= len(chunk)
        return b"".join(chunks)

    def resident_bytes(self) -> int:
        try:
            return psutil.Process(self.process.pid).memory_info().rss
        except psutil.NoSuchProcess:
            return 1 << 62

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        self.process.stdin.close()
        self.process.stdout.close()


class AnalysisPool:
    """At most `limits.workers` warm children of this process, each pre-importing `modules`; call() runs
    `module:function(*args)` in one of them. Children are started from one long-lived thread: they die with it
    (PR_SET_PDEATHSIG), so none outlives this process."""

    def __init__(self, limits: AnalysisLimits, modules: tuple[str, ...]):
        self.limits, self.modules = limits, modules
        self._turns = threading.BoundedSemaphore(limits.workers)
        self._lock = threading.Lock()
        self._idle: list[_Child] = []
        self._starter = ThreadPoolExecutor(1, thread_name_prefix="script-analysis")

    def call(self, function: str, *args):
        """function(*args) in a child; its JSON result, or ScriptAnalysisError."""
        payload = json.dumps({"call": function, "args": args}).encode()
        with self._turns:
            child = self._take()
            try:
                answer = child.request(payload, time.monotonic() + self.limits.seconds)
            except _ChildGone:
                self._replace(child)
                raise ScriptAnalysisError(self.limits.too_complex) from None
            except BaseException:
                self._replace(child)
                raise
            self._give_back(child, healthy="exhausted" not in answer)
        if "result" in answer:
            return answer["result"]
        if "rejected" in answer:
            raise ScriptAnalysisError(answer["rejected"])
        if "exhausted" in answer:
            raise ScriptAnalysisError(self.limits.too_complex)
        raise ScriptAnalysisError(f"the script could not be analysed: {answer.get('failed', 'no answer')}")

    def _take(self) -> _Child:
        with self._lock:
            while self._idle:
                child = self._idle.pop()
                if child.process.poll() is None:
                    return child
                child.stop()
        return self._starter.submit(_Child, self.modules, self.limits.memory_mb).result()

    def _give_back(self, child: _Child, healthy: bool) -> None:
        # a child that grew past half its cap keeps that memory: a fresh one replaces it
        if healthy and child.resident_bytes() < self.limits.memory_mb * MEGABYTE // 2:
            with self._lock:
                self._idle.append(child)
        else:
            self._replace(child)

    def _replace(self, child: _Child) -> None:
        """Stops the child and starts a warm one in its place, in the background."""
        child.stop()
        self._starter.submit(self._add_spare)

    def _add_spare(self) -> None:
        try:
            spare = _Child(self.modules, self.limits.memory_mb)
        except ScriptAnalysisError:
            return  # the next call starts one itself and says why it cannot
        with self._lock:
            if len(self._idle) < self.limits.workers:
                self._idle.append(spare)
                return
        spare.stop()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for child in idle:
            child.stop()
        self._starter.shutdown()


# --- what the gateway asks of a script ---------------------------------------------------------------------------

def literal_params(script: str):
    """The literal PARAMS of a script (None when it has none the way the contract wants it). Runs in the child."""
    try:
        module = ast.parse(script)
    except SyntaxError:
        return None  # the edit service says what is wrong with it
    for node in module.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == PARAMS_NAME for t in node.targets):
            try:
                params = ast.literal_eval(node.value)
            except ValueError:
                return None
            try:
                json.dumps(params, allow_nan=False)
            except (TypeError, ValueError):
                return None
            return params
    return None


# --- the child ---------------------------------------------------------------------------------------------------

def _die_with_parent() -> None:
    import ctypes
    import signal

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:
        os._exit(1)


def _answer(request: dict) -> dict:
    module_name, _, function_name = request["call"].partition(":")
    function = getattr(sys.modules[module_name], function_name)  # only modules imported at start
    try:
        return {"result": function(*request["args"])}
    except (MemoryError, RecursionError):
        return {"exhausted": True}
    except Exception as exc:  # noqa: BLE001 - every failure is an answer, the child goes on
        if hasattr(exc, "detail"):
            return {"rejected": exc.detail}
        return {"failed": f"{type(exc).__name__}: {str(exc)[:300]}"}


def _serve(memory_mb: int, modules: list[str]) -> None:
    _die_with_parent()
    for name in modules:
        importlib.import_module(name)
    baseline = psutil.Process().memory_info().vms
    resource.setrlimit(resource.RLIMIT_AS, (baseline + memory_mb * MEGABYTE,) * 2)
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing a library prints may corrupt the answers
    answers.write(HEADER.pack(2) + b"{}")  # ready
    answers.flush()
    while header := requests.read(HEADER.size):
        request = json.loads(requests.read(HEADER.unpack(header)[0]))
        answer = _answer(request)
        try:
            body = json.dumps(answer).encode()
        except MemoryError:
            answer, body = {"exhausted": True}, b'{"exhausted": true}'
        answers.write(HEADER.pack(len(body)) + body)
        answers.flush()
        if "exhausted" in answer:
            return  # the parent replaces this child


if __name__ == "__main__":
    _serve(int(sys.argv[1]), sys.argv[2:])
