"""A check's child is forked ahead from the warm zygote and joined into a fresh run cgroup while the worker is idle
(checks_app/engine/runner.py): a check hands the spare its job instead of forking and joining on its own path. The
spare keeps every guarantee a child forked for the check had: its cgroup with both caps before it reads anything, one
check per spare, a spare that died or whose zygote was replaced never used, its cgroup removed after its exit or
when the worker stops (real bubblewrap, real cgroups). Once in its cgroup, a spare copies the memory it shares with
the zygote, so its check pays no copy-on-write faults; never more than its cap leaves room for."""

from __future__ import annotations

import json
import mmap
import os
import signal
import time
from pathlib import Path

import pytest

from checks_app.engine import runner
from checks_app.engine.runner import RESULT_FILE, run_check_process
from models_app.conversion.sandbox import ConversionLimits
from sandboxing.zygote_server import COPY_CHUNK_BYTES, copy_shared_memory, populate_write_supported
from tests.helpers import poll, sample, skip_without_run_cgroups

pytestmark = pytest.mark.heavy

IDS = (Path(__file__).resolve().parents[2] / "checks_app" / "examples" / "review-basics.ids").read_text()
JOB = {"ids": [{"name": "review-basics.ids", "content": IDS}], "overrides": None}
LIMITS = ConversionLimits(memory_mb=1536)  # a zygote of these tests' own


@pytest.fixture(autouse=True)
def _cgroups_available():
    skip_without_run_cgroups()


@pytest.fixture
def forks(monkeypatch):
    """The children forked on a check's own path (no usable spare), and the spares the checks ran in."""
    seen = {"fresh": 0, "ran_in": []}
    fresh, run_in_child = runner._fresh_spare, runner._run_in_child

    def counted(*args):
        seen["fresh"] += 1
        return fresh(*args)

    def recorded(zygote, spare, *args):
        seen["ran_in"].append((spare.host_pid, [str(d) for d in spare.cgroup.directories]))
        return run_in_child(zygote, spare, *args)

    monkeypatch.setattr(runner, "_fresh_spare", counted)
    monkeypatch.setattr(runner, "_run_in_child", recorded)
    return seen


def check(tmp_path: Path, name: str, limits: ConversionLimits = LIMITS) -> runner.CheckOutcome:
    (tmp_path / name).mkdir()
    return run_check_process(ifc_path=sample("IfcOpenHouse_IFC4.ifc"), job=JOB, work_dir=tmp_path / name, timeout_seconds=300,
                             limits=limits, on_progress=lambda *_: None)


def settled_spare(limits: ConversionLimits = LIMITS) -> runner._Spare:
    """The zygote's spare, once the last check has settled (its child exited, the next spare made)."""
    zygote = runner.check_zygote(limits)
    with zygote.lock:
        assert zygote.spare is not None, "no spare child was made"
        return zygote.spare


def result(tmp_path: Path, name: str) -> dict:
    return json.loads((tmp_path / name / RESULT_FILE).read_text())


def cgroup_file(spare: runner._Spare, v2: str, v1: str) -> str:
    directory = next(d for d in spare.cgroup.directories if (d / v2).exists() or (d / v1).exists())
    return ((directory / v2) if (directory / v2).exists() else (directory / v1)).read_text().strip()


def test_warm_up_makes_a_spare_already_in_its_capped_cgroup_and_a_check_takes_it(tmp_path, forks):
    runner.warm_up(LIMITS)
    spare = settled_spare()
    assert cgroup_file(spare, "memory.max", "memory.limit_in_bytes") == str(LIMITS.memory_bytes)
    assert cgroup_file(spare, "pids.max", "pids.max") == str(LIMITS.processes)
    assert all(spare.host_pid in {int(pid) for pid in (d / "cgroup.procs").read_text().split()} for d in spare.cgroup.directories)
    directories = [str(d) for d in spare.cgroup.directories]  # read now: the cgroup goes once the check's child has exited
    outcome = check(tmp_path, "first")
    assert outcome.ok, outcome.error
    assert forks["fresh"] == 0 and forks["ran_in"] == [(spare.host_pid, directories)]
    assert result(tmp_path, "first")["summary"]["specifications"] == 13


def test_a_spare_copies_what_it_shares_with_its_zygote_into_its_own_cgroup_while_it_waits(tmp_path, forks):
    if not populate_write_supported():
        pytest.skip("the kernel has no MADV_POPULATE_WRITE (before Linux 5.14): a spare copies nothing, as before")
    runner.warm_up(LIMITS)
    spare = settled_spare()
    charged = poll(lambda: int(cgroup_file(spare, "memory.current", "memory.usage_in_bytes")), lambda used: used > 20 * 2**20, timeout=30)
    assert charged < LIMITS.memory_bytes // runner.COPY_SHARE_OF_CAP + 16 * 2**20  # the budget, and the little a child uses of its own
    poll(lambda: Path(f"/proc/{spare.host_pid}/status").read_text(), lambda status: "\nState:\tS" in status, timeout=30)  # done: on `go` again
    assert check(tmp_path, "after").ok and forks["fresh"] == 0


def _in_forked_child(measure) -> dict:
    """measure() run in a child forked from this process (its memory shared with it), its answer returned."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.write(write, json.dumps(measure()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        text = answer.read()
    os.waitpid(pid, 0)
    return json.loads(text)


def _private_bytes() -> int:
    with open("/proc/self/smaps_rollup") as rollup:
        return sum(int(line.split()[1]) * 1024 for line in rollup if line.startswith(("Private_Clean:", "Private_Dirty:")))


def _resident_bytes() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))


def test_copying_shared_memory_copies_the_present_pages_only_and_nothing_over_the_budget():
    if not populate_write_supported():
        pytest.skip("the kernel has no MADV_POPULATE_WRITE (before Linux 5.14): a spare copies nothing, as before")
    kept = [str(number) for number in range(400_000)]  # ~25 MB present in this process, so shared with the child
    resident = _resident_bytes()
    untouched = mmap.mmap(-1, 2 * resident)  # mapped, never touched: nothing to copy (copying it would pass `resident`)

    def copied(budget: int) -> dict:
        before = _private_bytes()
        return {"copied": copy_shared_memory(budget), "grew": _private_bytes() - before}

    everything = _in_forked_child(lambda: copied(2**40))
    assert 20 * 2**20 < everything["copied"] <= resident + 16 * 2**20 and everything["grew"] >= everything["copied"] * 0.9
    over_budget = _in_forked_child(lambda: copied(everything["copied"] // 2))
    assert over_budget["copied"] == 0 and over_budget["grew"] < everything["grew"] / 2  # only what the look itself wrote
    asked = []
    interrupted = _in_forked_child(lambda: copy_shared_memory(2**40, interrupted=lambda: asked.append(1) or len(asked) > 3))
    assert 0 < interrupted <= 3 * COPY_CHUNK_BYTES < everything["copied"]  # three chunks at most, then the job came
    assert len(kept) == 400_000 and len(untouched) == 2 * resident


def test_each_spare_serves_one_check_and_its_cgroup_goes_after_it(tmp_path, forks):
    runner.warm_up(LIMITS)
    for name in ("a", "b", "c"):
        assert check(tmp_path, name).ok
        settled_spare()
    pids = [pid for pid, _ in forks["ran_in"]]
    folders = [folder for _, directories in forks["ran_in"] for folder in directories]
    assert len(set(pids)) == 3 and len(set(folders)) == len(folders) and forks["fresh"] == 0
    assert not [folder for folder in folders if Path(folder).exists()]
    assert result(tmp_path, "a") == result(tmp_path, "b") == result(tmp_path, "c")


def test_a_spare_that_died_is_not_used(tmp_path, forks):
    runner.warm_up(LIMITS)
    dead = settled_spare()
    os.kill(dead.host_pid, signal.SIGKILL)
    zygote = runner.check_zygote(LIMITS)
    poll(lambda: runner._pending(zygote.control), bool, timeout=30)  # the zygote has said its child exited
    outcome = check(tmp_path, "after")
    assert outcome.ok, outcome.error
    assert forks["fresh"] == 1 and forks["ran_in"][0][0] != dead.host_pid
    assert not [d for d in dead.cgroup.directories if d.exists()]


def test_a_spare_of_a_replaced_zygote_is_not_used(tmp_path, forks):
    runner.warm_up(LIMITS)
    old = settled_spare()
    zygote = runner.check_zygote(LIMITS)
    os.killpg(zygote.process.pid, signal.SIGKILL)  # the zygote dies (its spare with it); the next check starts another
    poll(lambda: zygote.process.poll(), lambda code: code is not None, timeout=30)
    outcome = check(tmp_path, "after")
    assert outcome.ok, outcome.error
    assert forks["fresh"] == 1 and forks["ran_in"][0][0] != old.host_pid
    assert not [d for d in old.cgroup.directories if d.exists()]
    assert settled_spare().zygote_process is zygote.process


def test_a_spare_child_waits_asleep_for_its_job_and_ends_when_given_up(tmp_path):
    runner.warm_up(LIMITS)
    spare = settled_spare()
    zygote = runner.check_zygote(LIMITS)
    with zygote.lock:
        assert zygote.spare is spare and not runner._pending(zygote.control)  # waiting, not ended
        poll(lambda: Path(f"/proc/{spare.host_pid}/status").read_text(), lambda status: "\nState:\tS" in status, timeout=30)  # on `go`
        runner._discard(zygote)
        assert zygote.spare is None
    assert not [d for d in spare.cgroup.directories if d.exists()]
    deadline = time.monotonic() + 30
    while Path(f"/proc/{spare.host_pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{spare.host_pid}").exists() or "\nState:\tZ" in Path(f"/proc/{spare.host_pid}/status").read_text()


def test_the_memory_cap_and_the_time_limit_hold_for_a_check_in_a_spare(tmp_path, forks):
    small = ConversionLimits(memory_mb=8)
    runner.warm_up(small)
    settled_spare(small)
    capped = check(tmp_path, "capped", small)
    assert not capped.ok and "memory cap of 8 MB" in capped.error and capped.repeatable
    assert forks["fresh"] == 0
    (tmp_path / "timed").mkdir()
    runner.warm_up(LIMITS)
    settled_spare()
    timed = run_check_process(ifc_path=sample("duplex.ifc"), job=JOB, work_dir=tmp_path / "timed", timeout_seconds=0.05,
                              limits=LIMITS, on_progress=lambda *_: None)
    assert not timed.ok and "time limit" in timed.error and timed.repeatable
    assert forks["fresh"] == 0


def test_refused_without_a_cgroup_even_with_spares_elsewhere(tmp_path):
    plain = tmp_path / "not-a-cgroup"
    plain.mkdir()
    refused_limits = ConversionLimits(cgroup_root=str(plain))
    runner.warm_up(refused_limits)  # no spare can be made: no error here, the check says why
    refused = check(tmp_path, "refused", refused_limits)
    assert not refused.ok and "isolation unavailable" in refused.error and "conversionAllowNoCgroup" in refused.error
    assert not (tmp_path / "refused" / RESULT_FILE).exists()
