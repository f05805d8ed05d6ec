"""bubblewrap command lines shared by the edit service's script runs and the gateway's conversions.

Isolation of every sandbox: no network; a new user namespace as uid 65534 that cannot create nested user namespaces;
new pid, ipc, uts and cgroup namespaces; all capabilities dropped; a read-only root made of the system folders and,
for Python programs, the interpreter and its site-packages (never the working directory or a checkout, which may
hold the data directory and the configuration); /dev read-only with only the standard device nodes, /dev/shm a
size-capped tmpfs (or read-only); `--die-with-parent` and a new session; the seccomp filter of seccomp.py, which
bubblewrap installs just before it executes the program. Limits: rlimits set by prlimit in the exec chain (no
preexec_fn: the callers have threads) and, where a run cgroup exists, a shell that joins it before anything of the
run exists.

The chain's first step binds it to its parent's life: bubblewrap sets the outer process's parent-death signal only
after it has cloned the sandbox, so a parent killed while its child was still on its way into bwrap (a copy of the
parent before exec, or bwrap before its clone) left a whole sandbox running with no one to stop it. setpriv sets the
signal first thing, and the shell then checks that the parent is still the one that started the chain (a parent dead
before the signal was set is not signalled at all). A window is left inside bubblewrap: the sandbox's pid 1 sets its
own signal (against the outer bwrap) only after its mounts, so a parent killed during them still leaves the sandbox
running (containers/bubblewrap#633); the edit service's runs end themselves once their outputs' reader is gone
(edit_service/sandbox/outputs.py), and a run cgroup's sweep (cgroups.remove_stale, at the next start of a worker or
the edit service) is the backstop for the others. The shell also drops its own variables, which bwrap's pid 1 would
keep in its environment (readable by the program as /proc/1/environ).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sandboxing.cgroups import RunCgroup

SANDBOX_UID = 65534
MEGABYTE = 1024 * 1024
CGROUP_JOIN_FAILED = 97  # exit code of the exec chain when the run could not join its cgroup
PARENT_GONE = 98  # exit code of the exec chain when the process that started it died before the chain was bound to it
_GUARD = (f'[ "$PPID" = "$SANDBOX_PARENT" ] || exit {PARENT_GONE}; '
          f'for f in $SANDBOX_CGROUP_PROCS; do echo $$ > "$f" || exit {CGROUP_JOIN_FAILED}; done; '
          'unset SANDBOX_PARENT SANDBOX_CGROUP_PROCS PWD OLDPWD; exec "$@"')


def isolation() -> list[str]:
    return [
        "--die-with-parent", "--new-session", "--unshare-all", "--unshare-user", "--disable-userns",
        "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--cap-drop", "ALL",
    ]


def tmpfs(path: str, size_mb: float) -> list[str]:
    return ["--size", str(int(size_mb * MEGABYTE)), "--tmpfs", path]


def ro_bind(source: str | Path, target: str | Path | None = None) -> list[str]:
    return ["--ro-bind", str(source), str(target if target is not None else source)]


def system_mounts() -> list[str]:
    args = ro_bind("/usr")
    for top in ("/lib", "/lib64", "/bin", "/sbin"):
        path = Path(top)
        if path.is_symlink():
            args += ["--symlink", os.readlink(top), top]
        elif path.is_dir():
            args += ro_bind(top)
    for etc_file in ("/etc/ld.so.cache", "/etc/localtime"):
        if Path(etc_file).exists():
            args += ro_bind(etc_file)
    return args


def python_mounts() -> list[str]:
    """The interpreter's prefixes, the venv and every other import path (a .pth may point anywhere), wherever they
    live (under /tmp too: they are mounted after a private /tmp), at the paths Python knows them by and, where a
    symlink leads elsewhere (a venv linked into a worktree), at their real paths too."""
    candidates = {sys.base_prefix, sys.prefix, str(Path(sys.executable).parent.parent)}
    # site-packages only: other import paths (the working directory, a checkout) may hold the data and the config
    candidates |= {entry for entry in sys.path if {"site-packages", "dist-packages"} & set(Path(entry).parts) and Path(entry).is_dir()}
    candidates |= {str(Path(path).resolve()) for path in candidates} | {str(Path(sys.executable).resolve().parent.parent)}
    return [arg for path in _outermost(os.path.abspath(p) for p in candidates) for arg in ro_bind(path)]


def _outermost(paths) -> list[str]:
    chosen: list[str] = []
    for path in sorted(paths):
        if path.startswith("/usr/") or path == "/" or any(path == c or path.startswith(c + "/") for c in chosen):
            continue
        chosen.append(path)
    return chosen


def devices(shm_mb: float) -> list[str]:
    """/proc of the run's pid namespace; /dev read-only; /dev/shm a tmpfs of shm_mb (read-only when 0)."""
    return ["--proc", "/proc", "--dev", "/dev", *(tmpfs("/dev/shm", shm_mb) if shm_mb else []), "--remount-ro", "/dev"]


def environment(values: dict[str, str]) -> list[str]:
    return ["--clearenv", *[arg for name, value in values.items() for arg in ("--setenv", name, value)]]


def command(bwrap: str, *, program: list[str], mounts: list[str], workdir: str, env: dict[str, str], shm_mb: float = 0,
            before_mounts: list[str] | None = None) -> list[str]:
    """The bwrap command line. `before_mounts` (private tmpfs) come first, so binds below them are mounted over them."""
    return [
        bwrap, *isolation(), *(before_mounts or []), *system_mounts(), *mounts, *devices(shm_mb),
        "--remount-ro", "/", "--chdir", workdir, *environment(env), *program,
    ]


def limited(bwrap_command: list[str], *, rlimits: dict[str, int], cgroup: RunCgroup | None,
            seccomp_fd: int) -> tuple[list[str], dict[str, str]]:
    """(argv, extra environment) for the calling process to start: the chain is killed when its starter dies (exit
    code PARENT_GONE when that happened before it was bound; see the module's text for the window left inside
    bubblewrap), with a cgroup first moves into it (exit code CGROUP_JOIN_FAILED when that fails), sets the rlimits
    (prlimit option name -> value), then execs bwrap, which installs the seccomp filter read from `seccomp_fd`
    (seccomp.program_fd(); the caller passes it to the child and closes it)."""
    bwrap, *arguments = bwrap_command
    chain = ["prlimit", *(f"--{name}={value}" for name, value in rlimits.items()), "--", bwrap, "--seccomp", str(seccomp_fd), *arguments]
    environment = {"SANDBOX_PARENT": str(os.getpid())}
    if cgroup is not None:
        environment["SANDBOX_CGROUP_PROCS"] = " ".join(cgroup.procs_files)
    return ["setpriv", "--pdeathsig", "KILL", "--", "/bin/sh", "-c", _GUARD, "sandbox", *chain], environment
