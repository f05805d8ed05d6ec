"""IDS checks parse untrusted IFC, so their child process is confined like a conversion's ifcopenshell stage (real
bubblewrap, real cgroups): it sees neither the configuration nor the data directory, has no network and nothing
writable, is killed at its memory cap, and is refused where no cgroup can be made unless the operator opted in."""

import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from checks_app.engine.runner import RESULT_FILE, run_check_process
from models_app.conversion.sandbox import ConversionLimits
from sandboxing.limits import python_command
from sandboxing.probe import run_sandbox
from tests.gateway.test_conversion_sandbox import PYTHON_PROBE, gateway_files, listener  # noqa: F401 - fixtures
from tests.helpers import sample

IDS = (__import__("pathlib").Path(__file__).resolve().parents[2] / "checks_app" / "examples" / "review-basics.ids").read_text()
JOB = {"ids": [{"name": "review-basics.ids", "content": IDS}], "overrides": None}


def test_the_check_sandbox_sees_no_secret_no_model_no_network(gateway_files, listener):  # noqa: F811
    port, accepted = listener
    targets = {**{k: str(v) for k, v in gateway_files.items()}, "port": port}
    limits = ConversionLimits()
    command = python_command(limits, ["-c", PYTHON_PROBE, json.dumps(targets)], packages=("checks_app",))
    done = run_sandbox(command, rlimits=limits.rlimits(), timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["config"] == found["other"] == found["data"] == "No such file or directory"
    assert found["network"] != "connected" and accepted == [] and found["writable"] == [] and found["uid"] == 65534


def test_a_check_runs_confined_and_reports_progress(tmp_path):
    progress = []
    outcome = run_check_process(ifc_path=sample("duplex.ifc"), job=JOB, work_dir=tmp_path, timeout_seconds=300,
                                limits=ConversionLimits(), on_progress=lambda phase, percent: progress.append(phase))
    assert outcome.ok, outcome.error
    result = json.loads((tmp_path / RESULT_FILE).read_text())
    assert result["summary"]["specifications"] == 13 and {"reading", "checking"} <= set(progress)


def test_a_check_is_killed_at_its_memory_cap(tmp_path):
    # the cap holds what the check allocates after the fork (the warm zygote's interpreter and imports are shared
    # and charged elsewhere): checking duplex takes 12-24 MB of its own
    outcome = run_check_process(ifc_path=sample("duplex.ifc"), job=JOB, work_dir=tmp_path, timeout_seconds=300,
                                limits=ConversionLimits(memory_mb=8), on_progress=lambda *_: None)
    assert not outcome.ok and "memory cap of 8 MB" in outcome.error and outcome.repeatable


def test_without_a_cgroup_a_check_is_refused_unless_allowed(tmp_path):
    plain = tmp_path / "not-a-cgroup"
    plain.mkdir()
    (tmp_path / "refused").mkdir()
    refused = run_check_process(ifc_path=sample("IfcOpenHouse_IFC4.ifc"), job=JOB, work_dir=tmp_path / "refused", timeout_seconds=300,
                                limits=ConversionLimits(cgroup_root=str(plain)), on_progress=lambda *_: None)
    assert not refused.ok and "isolation unavailable" in refused.error and "conversionAllowNoCgroup" in refused.error
    assert not (tmp_path / "refused" / RESULT_FILE).exists()
    (tmp_path / "allowed").mkdir()
    allowed = run_check_process(ifc_path=sample("IfcOpenHouse_IFC4.ifc"), job=JOB, work_dir=tmp_path / "allowed", timeout_seconds=300,
                                limits=replace(ConversionLimits(cgroup_root=str(plain)), allow_no_cgroup=True), on_progress=lambda *_: None)
    assert allowed.ok, allowed.error


def test_the_forked_check_is_found_without_walking_every_process_of_the_host(tmp_path, monkeypatch):
    # psutil's walk reads /proc/<pid>/stat of every process (30-140 ms per check on a busy host); the children files
    # of the sandbox's short chain lead to the forked check in a few reads
    import sandboxing.zygote

    if not Path(f"/proc/self/task/{threading.get_native_id()}/children").exists():
        pytest.skip("this kernel has no /proc children files (CONFIG_PROC_CHILDREN): psutil's walk is the fallback")

    def no_walk(pid):
        raise AssertionError("the host's whole process table was read")

    from checks_app.engine.runner import discard_spare

    discard_spare(ConversionLimits())  # the check forks its own child, not one made ahead
    monkeypatch.setattr(sandboxing.zygote.psutil, "Process", no_walk)
    outcome = run_check_process(ifc_path=sample("IfcOpenHouse_IFC4.ifc"), job=JOB, work_dir=tmp_path, timeout_seconds=300,
                                limits=ConversionLimits(), on_progress=lambda *_: None)
    assert outcome.ok, outcome.error


def test_the_result_is_handed_back_while_the_child_exits_and_the_next_check_waits_for_that(tmp_path, monkeypatch):
    from checks_app.engine import runner
    from sandboxing import cgroups

    exit_seen, events = threading.Event(), []
    expect = runner.CheckZygote.expect

    def held_exit(zygote, key, deadline):
        if key == "exited":
            exit_seen.wait(60)  # held until the result is back (the whole minute if the caller waited for the exit)
            events.append("exit seen")
        return expect(zygote, key, deadline)

    monkeypatch.setattr(runner.CheckZygote, "expect", held_exit)
    used = []  # the run cgroups the checks' children ran in
    run_in_child = runner._run_in_child

    def recorded(zygote, spare, *args):
        used.append(spare.cgroup.directories.copy())
        return run_in_child(zygote, spare, *args)

    monkeypatch.setattr(runner, "_run_in_child", recorded)
    limits = ConversionLimits()
    (tmp_path / "first").mkdir()
    outcome = run_check_process(ifc_path=sample("IfcOpenHouse_IFC4.ifc"), job=JOB, work_dir=tmp_path / "first", timeout_seconds=300,
                                limits=limits, on_progress=lambda *_: None)
    events.append("result back")
    assert outcome.ok and json.loads((tmp_path / "first" / RESULT_FILE).read_text())["summary"]["specifications"] == 13
    exit_seen.set()
    (tmp_path / "second").mkdir()
    following = run_check_process(ifc_path=sample("IfcOpenHouse_IFC4.ifc"), job=JOB, work_dir=tmp_path / "second", timeout_seconds=300,
                                  limits=limits, on_progress=lambda *_: None)
    assert following.ok, following.error
    assert events[:2] == ["result back", "exit seen"]
    zygote = runner.check_zygote(limits)
    with zygote.lock:  # the second child's exit settled: its run cgroup is gone; the one left is the next spare's
        assert len(used) == 2 and used[0] != used[1]
        assert not [directory for directories in used for directory in directories if directory.exists()]
        assert not {directory.name for directories in used for directory in directories} & cgroups._in_use
        assert zygote.spare is not None and zygote.spare.cgroup.directories not in used
