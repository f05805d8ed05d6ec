"""The entry of a confined child process started on its own (an IDS check's checks_app.engine.child, a clash run's
coordination_app.run_child): it caps its own address space when asked (--memory-mb, where there is no cgroup) and
turns running out of memory into a message on stderr and an exit code of its own. Runs inside the sandbox, so it
imports nothing but the standard library."""

from __future__ import annotations

import argparse
import resource
import sys
from typing import Callable


def capped_main(parser: argparse.ArgumentParser, argv, run: Callable[[argparse.Namespace], int], what: str,
                memory_exit_code: int) -> int:
    """Adds --memory-mb to the child's `parser`, caps RLIMIT_AS at it (0: no cap) and returns run(args), or
    memory_exit_code when `what` ("the check") ran out of memory."""
    parser.add_argument("--memory-mb", type=int, default=0)
    args = parser.parse_args(argv)
    if args.memory_mb > 0:
        limit = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        return run(args)
    except MemoryError:
        sys.stderr.write(f"{what} ran out of memory (limit {args.memory_mb} MB)\n")
        return memory_exit_code
