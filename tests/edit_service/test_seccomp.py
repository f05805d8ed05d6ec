"""The seccomp filter of every sandbox, on the real bubblewrap: inside a build script's sandbox and inside the
conversion/check sandbox, the denied system calls fail with EPERM while threads, processes and the default persona
still work; a conversion's processes and a build script run filtered; where the filter cannot be built or is not in
force, every sandbox refuses to run (fail closed)."""

import json
import os
import shutil
import stat

import psutil
import pytest

from checks_app.engine.runner import JOB_FILE, run_check_process
from edit_service.engine.errors import SandboxUnavailable
from edit_service.engine.sandbox import Sandbox, SandboxLimits
from models_app.conversion import sandbox as conversion_sandbox
from models_app.conversion.runner import run_pipeline
from sandboxing import probe, seccomp
from sandboxing.limits import python_command
from sandboxing.probe import ProbeCache, run_sandbox
from tests.checks.test_check_confinement import JOB
from tests.edit_service.test_sandbox import result, run, run_dir  # noqa: F401 - fixture
from tests.helpers import sample
from viewer_gateway.config import SHIPPED_CONVERTER

X32_SYSCALL_BIT = 0x40000000
NUMBERS = {name: seccomp.native_number(name) for name in (
    "io_uring_setup", "keyctl", "add_key", "ptrace", "unshare", "perf_event_open", "personality", "getpid")}
DENIED = ["io_uring_setup", "keyctl", "add_key", "ptrace_attach_pid_1", "ptrace_seize_pid_1", "unshare_user",
          "unshare_net", "perf_event_open", "personality_no_aslr", "x32_getpid"]
ALLOWED = ["personality_query", "personality_linux", "unshare_files", "thread", "subprocess"]
# tries each call with ctypes' syscall(); prints {call: "ok" | strerror}. The ptraces come last: on an unfiltered
# sandbox an attached pid 1 stays stopped, and the run would only end at its time limit
GUEST = """
import ctypes, json, os, subprocess, sys, threading
numbers = json.loads(NUMBERS)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def attempt(name, *args):
    ctypes.set_errno(0)
    return "ok" if libc.syscall(ctypes.c_long(numbers[name]), *(ctypes.c_long(a) for a in args)) >= 0 else os.strerror(ctypes.get_errno())

io_uring_params = ctypes.create_string_buffer(120)
perf_attr = ctypes.create_string_buffer((1).to_bytes(4, "little") + (128).to_bytes(4, "little"), 128)  # software clock
found = {
    "io_uring_setup": attempt("io_uring_setup", 1, ctypes.addressof(io_uring_params)),
    "keyctl": attempt("keyctl", 0, -3, 1),  # KEYCTL_GET_KEYRING_ID of the session keyring, created
    "add_key": attempt("add_key", 0, 0, 0, 0, -3),
    "unshare_user": attempt("unshare", 0x10000000),
    "unshare_net": attempt("unshare", 0x40000000),
    "unshare_files": attempt("unshare", 0x400),
    "perf_event_open": attempt("perf_event_open", ctypes.addressof(perf_attr), 0, -1, -1, 0),
    "personality_no_aslr": attempt("personality", 0x0040000),
    "personality_query": attempt("personality", 0xFFFFFFFF),
    "personality_linux": attempt("personality", 0),
    "x32_getpid": attempt("x32_getpid"),
}
worker = threading.Thread(target=found.__setitem__, args=("thread", "ok"))
worker.start()
worker.join()
found["subprocess"] = "ok" if subprocess.run(["true"]).returncode == 0 else "failed"
found["seccomp_mode"] = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("Seccomp:"))
found["ptrace_seize_pid_1"] = attempt("ptrace", 0x4206, 1, 0, 0)
found["ptrace_attach_pid_1"] = attempt("ptrace", 16, 1, 0, 0)
RESULT(json.dumps(found))
""".replace("NUMBERS", repr(json.dumps({**NUMBERS, "x32_getpid": NUMBERS["getpid"] | X32_SYSCALL_BIT})))


def assert_filtered(found: dict) -> None:
    assert {name: found[name] for name in DENIED} == {name: "Operation not permitted" for name in DENIED}
    assert {name: found[name] for name in ALLOWED} == {name: "ok" for name in ALLOWED}
    assert found["seccomp_mode"] == "2"


def test_denied_calls_fail_with_eperm_in_a_build_scripts_sandbox(run_dir):  # noqa: F811
    outcome = run(Sandbox(SandboxLimits(wall_seconds=20)), run_dir, GUEST.replace("RESULT(", "open('result.txt', 'w').write("))
    assert not outcome.timed_out and outcome.returncode == 0, outcome.stderr_tail
    assert_filtered(json.loads(result(outcome)))


def test_denied_calls_fail_with_eperm_in_the_conversion_and_check_sandbox():
    limits = conversion_sandbox.ConversionLimits()
    command = python_command(limits, ["-c", GUEST.replace("RESULT(", "print(")], packages=("checks_app",))
    done = run_sandbox(command, rlimits=limits.rlimits(), timeout=20)
    assert done.returncode == 0, done.stderr
    assert_filtered(json.loads(done.stdout))


def test_a_build_script_making_a_real_model_runs_filtered(tmp_path):
    script = tmp_path / "runs" / "r1"
    script.mkdir(parents=True)
    build = """
import script_lib as sl

def build(params, out_path):
    model = sl.new_model("filtered")
    mode = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("Seccomp:"))
    model.by_type("IfcProject")[0].Description = f"seccomp {mode}"
    sl.save(model, out_path)
"""
    product, _, _ = Sandbox(SandboxLimits(wall_seconds=120)).build(build, {}, script)
    assert "seccomp 2" in product.read_text()


def test_a_conversion_of_a_real_sample_runs_filtered(tmp_path):
    limits = conversion_sandbox.ConversionLimits()
    done = run_pipeline(sample("IfcOpenHouse_IFC4.ifc"), tmp_path, node_bin="node", converter_script=SHIPPED_CONVERTER,
                        timeout_seconds=300, on_progress=lambda *_: None, limits=limits)
    assert done.ok, done.error
    assert (tmp_path / "model.xkt").stat().st_size > 0
    zygote = conversion_sandbox.zygote_for(limits).process
    sandboxed = [p for p in psutil.Process(zygote.pid).children(recursive=True) if p.name().startswith("python")]
    assert sandboxed and all(_seccomp_mode(p.pid) == "2" for p in sandboxed)


def test_an_ids_check_still_runs(tmp_path):
    outcome = run_check_process(ifc_path=sample("duplex.ifc"), job=JOB, work_dir=tmp_path, timeout_seconds=300,
                                limits=conversion_sandbox.ConversionLimits(), on_progress=lambda *_: None)
    assert outcome.ok, outcome.error


def _seccomp_mode(pid: int) -> str:
    with open(f"/proc/{pid}/status") as status:
        return next(line.split()[1] for line in status if line.startswith("Seccomp:"))


def test_the_filter_is_built_once_and_every_start_reads_it_whole():
    assert seccomp.program() is seccomp.program() and len(seccomp.program()) % 8 == 0  # BPF instructions
    first, second = seccomp.program_fd(), seccomp.program_fd()
    try:
        assert os.read(first, 1 << 20) == os.read(second, 1 << 20) == seccomp.program()
    finally:
        os.close(first)
        os.close(second)


@pytest.fixture
def fresh_probes(monkeypatch):
    """Probe answers of this test only (the services remember theirs per process)."""
    monkeypatch.setattr(probe, "_filter_probes", ProbeCache())
    monkeypatch.setattr(Sandbox, "_probes", ProbeCache())


def _refused_everywhere(bwrap: str, tmp_path, expected: str) -> None:
    with pytest.raises(SandboxUnavailable) as refused:
        Sandbox(SandboxLimits(bwrap=bwrap)).ensure_available()
    assert expected in refused.value.detail
    with pytest.raises(conversion_sandbox.ConversionUnavailable, match=expected):
        conversion_sandbox.Zygote(conversion_sandbox.ConversionLimits(bwrap=bwrap)).start()
    check = run_check_process(ifc_path=sample("duplex.ifc"), job=JOB, work_dir=tmp_path, timeout_seconds=60,
                              limits=conversion_sandbox.ConversionLimits(bwrap=bwrap), on_progress=lambda *_: None)
    assert not check.ok and "check refused" in check.error and expected in check.error
    assert not (tmp_path / JOB_FILE).exists()


def test_without_libseccomp_every_sandbox_refuses_to_run(fresh_probes, monkeypatch, tmp_path):
    def missing_library():
        raise seccomp.FilterUnavailable("the seccomp filter cannot be built (no libseccomp); install the libseccomp2 package")

    monkeypatch.setattr(seccomp, "program", missing_library)
    _refused_everywhere("bwrap", tmp_path, "install the libseccomp2 package")


def test_a_bubblewrap_that_drops_the_filter_is_refused(fresh_probes, tmp_path):
    """A bwrap that starts programs without installing the filter: the probe sees it, and no sandbox runs."""
    unfiltering = tmp_path / "bwrap-without-seccomp"
    unfiltering.write_text(f'#!/bin/sh\n# drops "--seccomp FD"\nshift 2\nexec {shutil.which("bwrap")} "$@"\n')
    unfiltering.chmod(unfiltering.stat().st_mode | stat.S_IXUSR)
    work = tmp_path / "check"
    work.mkdir()
    _refused_everywhere(str(unfiltering), work, "the seccomp filter is not in force")
