"""The seccomp filter of every sandboxed process, compiled with libseccomp (through pyseccomp) into the BPF program
bubblewrap installs with `--seccomp FD` just before it executes the sandboxed program.

A deny list, like Docker's and Flatpak's defaults: everything not listed is allowed, so that Python, ifcopenshell's
geometry threads, numpy, manifold3d and node keep working; the listed system calls fail with EPERM (not a kill, so a
program sees an ordinary error and fails cleanly). System calls of another ABI than the native one (32-bit x86
through int 0x80, x32) fail with EPERM as a whole: the deny list is written for the native numbers only, and
libseccomp refuses x32 numbers on x86_64 filters for the same reason. docs/operations/sandbox-isolation.md says why
each call is denied.
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile

# kernel interfaces a sandboxed program has no use for and that are frequent sources of privilege escalation
DENIED = (
    # io_uring: a large attack surface of its own, and its queued operations are not seen by seccomp
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    # the kernel keyring is not namespaced: keys would be shared with the host's uid 65534
    "keyctl", "add_key", "request_key",
    # another process's memory and execution (a script could stop its own pid 1 and stall until the time limit)
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "perf_event_open", "bpf", "userfaultfd",
    # file systems and namespaces: the sandbox's mounts and namespaces are bubblewrap's, set up before this filter
    "mount", "umount2", "pivot_root", "setns", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
    "mount_setattr",
    # the machine itself
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff",
    "acct", "quotactl", "quotactl_fd", "syslog", "uselib", "lookup_dcookie",
    # file handles bypass the mount namespace (a handle may name any file of the file system)
    "open_by_handle_at", "name_to_handle_at",
)
NAMESPACE_FLAGS = {  # clone(2) and unshare(2) flags that make a namespace
    "CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000, "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000, "CLONE_NEWNET": 0x40000000,
}
CLONE_NEWTIME = 0x00000080  # unshare only: in clone's flags this bit belongs to the exit signal
TERMINAL_IOCTLS = {"TIOCSTI": 0x5412, "TIOCLINUX": 0x541C}  # typing into a terminal, console control
PERSONALITY_QUERY = 0xFFFFFFFF  # personality(0xffffffff) reads the persona without changing it


class FilterUnavailable(Exception):
    """The seccomp filter cannot be built here; the message says why and what to install."""


def _personality_changes(pyseccomp) -> list:
    """Comparisons matching every persona other than PER_LINUX (0) and the query: a 32-bit value that is neither all
    zeros nor all ones has some set bit whose next bit (cyclically) is clear. libseccomp allows one comparison per
    argument in a rule, so "neither 0 nor the query" is written as these 32 alternatives."""
    rules = []
    for bit in range(32):
        this, following = 1 << bit, 1 << ((bit + 1) % 32)
        rules.append(pyseccomp.Arg(0, pyseccomp.MASKED_EQ, this | following, this))
    return rules


def _native_number(pyseccomp, name: str) -> int:
    number = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
    if number == -1:  # -1: unknown to this libseccomp (other negative numbers: not a system call of this machine)
        raise FilterUnavailable(f"libseccomp does not know the system call {name}; install libseccomp2 2.5 or later")
    return number


@functools.cache
def program() -> bytes:
    """The compiled filter (BPF for the native architecture), built once per process. Raises FilterUnavailable."""
    try:
        import pyseccomp
    except (ImportError, RuntimeError, OSError) as exc:  # RuntimeError: pyseccomp found no libseccomp
        raise FilterUnavailable(f"the seccomp filter cannot be built ({exc}); install the libseccomp2 package") from None
    deny = pyseccomp.ERRNO(errno.EPERM)
    try:
        sandbox_filter = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
        sandbox_filter.set_attr(pyseccomp.Attr.ACT_BADARCH, deny)
        for name in DENIED:
            sandbox_filter.add_rule(deny, _native_number(pyseccomp, name))
        for flag in NAMESPACE_FLAGS.values():
            sandbox_filter.add_rule(deny, _native_number(pyseccomp, "clone"), pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag))
        for flag in (*NAMESPACE_FLAGS.values(), CLONE_NEWTIME):
            sandbox_filter.add_rule(deny, _native_number(pyseccomp, "unshare"), pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag))
        # clone3 passes its flags in memory, out of the filter's sight: ENOSYS makes glibc (threads) fall back to clone
        sandbox_filter.add_rule(pyseccomp.ERRNO(errno.ENOSYS), _native_number(pyseccomp, "clone3"))
        for request in TERMINAL_IOCTLS.values():  # the request is an int: the upper half of the register is ignored
            sandbox_filter.add_rule(deny, _native_number(pyseccomp, "ioctl"), pyseccomp.Arg(1, pyseccomp.MASKED_EQ, 0xFFFFFFFF, request))
        for persona in _personality_changes(pyseccomp):
            sandbox_filter.add_rule(deny, _native_number(pyseccomp, "personality"), persona)
        with tempfile.TemporaryFile() as compiled:
            sandbox_filter.export_bpf(compiled)
            compiled.seek(0)
            return compiled.read()
    except OSError as exc:
        raise FilterUnavailable(f"libseccomp could not build the seccomp filter: {exc.strerror or exc}") from None


def program_fd() -> int:
    """A new descriptor holding the compiled filter at offset 0, for one bubblewrap start: bubblewrap reads it to its
    end, so every start needs its own. The caller passes it to the child (pass_fds) and closes it after the start.
    Raises FilterUnavailable (not after the sandbox's probe succeeded in this process: the filter is built by then)."""
    compiled = program()
    fd = os.memfd_create("sandbox-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, compiled)  # a few KB into a memfd: written whole
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd


def native_number(name: str) -> int:
    """A system call's number on this machine (for programs that test the filter from inside a sandbox)."""
    import pyseccomp

    return _native_number(pyseccomp, name)
