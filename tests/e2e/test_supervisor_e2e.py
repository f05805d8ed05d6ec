"""`make run` keeps the service up: supervisord restarts each kind of process after a SIGKILL (as an out-of-memory
kill would end it) while the others keep running, queued conversions and IDS checks are done by the restarted
workers, a process that keeps dying at start is given up on loudly, and Ctrl-C leaves no process behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
import requests

from tests.checks.conftest import fire_ids
from tests.e2e.stack import ROOT, free_port, seed_migrated_database
from tests.helpers import poll, sample
from tests.processes import signal_group, spawn, still_running

pytestmark = pytest.mark.e2e

# the command line that tells each kind of supervised process apart
KINDS = {"gateway": "run_gateway", "worker": "conversion_worker", "edit": "edit_service", "checks": "check_worker"}


@dataclass
class Run:
    make: subprocess.Popen
    url: str
    data_dir: Path

    @property
    def log(self) -> str:
        return (self.data_dir / "make.log").read_text(errors="replace")

    def log_while_running(self) -> str:
        assert self.make.poll() is None, f"make run exited early:\n{self.log[-3000:]}"
        return self.log

    def supervisor_lines(self) -> str:
        """supervisord's own lines of the output (spawned, exited, gave up), for failure messages."""
        return "\n".join(line for line in self.log.splitlines() if " | " not in line)

    def pids(self, kind: str) -> list[int]:
        """Pids of the running processes of one kind: the topmost of make's descendants with that command line (not
        the sandboxes they start)."""
        found = []
        for process in psutil.Process(self.make.pid).children(recursive=True):
            try:
                if KINDS[kind] in " ".join(process.cmdline()) and KINDS[kind] not in " ".join(process.parent().cmdline()):
                    found.append(process.pid)
            except (psutil.NoSuchProcess, psutil.ZombieProcess, AttributeError):  # ended meanwhile (no parent any more)
                continue
        return found

    def api(self, method: str, path: str, **kwargs) -> dict:
        return requests.request(method, self.url + path, timeout=60, **kwargs).json()

    def answers(self, path: str) -> dict | None:
        try:
            return self.api("GET", path)
        except requests.RequestException:  # not listening (yet)
            return None


def start_make_run(data_dir: Path, edit_port: int | None = None) -> Run:
    """`make run` as a user starts it, with its own configuration on free ports and data directory (its database
    migrated ahead: `make run` from nothing is test_make_run's)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    seed_migrated_database(data_dir)
    port = free_port()
    config = data_dir / "server_config.json"
    config.write_text(json.dumps({"port": port, "dataDir": str(data_dir), "conversionWorkers": 1}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIEWER_", "DJANGO_", "EDIT_", "MAKE", "RUN_"))}
    env.update(VIEWER_CONFIG=str(config), EDIT_SERVICE_PORT=str(edit_port or free_port()))
    # appended to: supervisord writes its own lines and its children's (through /dev/stdout) on two descriptors
    with open(data_dir / "make.log", "ab") as log:
        make = spawn(["make", "run"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    return Run(make, f"http://127.0.0.1:{port}", data_dir)


def wait_answering(run: Run, path: str = "/api/v1/models") -> dict:
    def answer():
        run.log_while_running()
        return run.answers(path)

    return poll(answer, lambda body: body is not None and body.get("code") == 0, timeout=240, interval=0.3)


def ctrl_c(run: Run) -> list[str]:
    """SIGINT to make's process group, as Ctrl-C in its terminal; returns the processes still alive after it."""
    started = psutil.Process(run.make.pid).children(recursive=True)
    signal_group(run.make.pid, signal.SIGINT)
    run.make.wait(timeout=90)
    alive = still_running(started, timeout=30)
    survivors = []
    for process in alive:
        try:
            survivors.append(" ".join(process.cmdline()))
            process.kill()
        except psutil.NoSuchProcess:
            continue
    return survivors


def kill_and_wait_restart(run: Run, kind: str) -> int:
    """SIGKILL to the (first) process of that kind; returns the pid supervisord started in its place."""
    (old, *_) = run.pids(kind)
    kill(old)
    return poll(lambda: run.pids(kind), lambda pids: pids and old not in pids, timeout=60, interval=0.2)[0]


def kill(pid: int) -> None:
    process = psutil.Process(pid)
    process.kill()
    still_running([process], timeout=30)


def upload(run: Run, name: str) -> dict:
    with open(sample(name), "rb") as handle:
        body = run.api("POST", "/api/v1/models", files={"file": (name, handle, "application/octet-stream")})
    assert body["code"] == 0, body
    return body["data"]


def wait_model(run: Run, model_id: str) -> dict:
    return poll(lambda: run.api("GET", f"/api/v1/models/{model_id}")["data"], lambda m: m["status"] != "converting", timeout=300, interval=0.3)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    running = start_make_run(tmp_path_factory.mktemp("supervised"))
    try:
        wait_answering(running)
        poll(lambda: {kind for kind in KINDS if running.pids(kind)}, lambda up: up == set(KINDS), timeout=60, interval=0.2)
        yield running
    finally:
        survivors = ctrl_c(running)
    assert survivors == [], survivors


@pytest.fixture(scope="module")
def model(run) -> str:
    model = upload(run, "IfcOpenHouse_IFC4.ifc")
    assert wait_model(run, model["id"])["status"] == "ready"
    return model["id"]


def test_each_line_of_output_names_its_process(run):
    def named(lines: list[str]) -> set[str]:
        return {name for name in ("gateway", "worker_00", "edit", "checks") if any(line.startswith(f"{name} | ") for line in lines)}

    # a process may print its first line a little after the others are up (a loaded machine)
    poll(lambda: named(run.log.splitlines()), lambda seen: len(seen) == 4, timeout=60, interval=0.2)


def test_a_killed_gateway_answers_again_and_the_others_stay_up(run):
    others = {kind: run.pids(kind) for kind in KINDS if kind != "gateway"}
    new_pid = kill_and_wait_restart(run, "gateway")
    assert wait_answering(run)["code"] == 0
    assert run.pids("gateway") == [new_pid]
    assert {kind: run.pids(kind) for kind in others} == others, run.supervisor_lines()


def test_a_conversion_queued_while_the_worker_was_dead_completes(run):
    (old,) = run.pids("worker")
    kill(old)
    queued = upload(run, "IfcOpenHouse_IFC4.ifc")  # before the restarted worker has started to poll the queue
    assert queued["status"] == "converting"
    converted = wait_model(run, queued["id"])
    assert converted["status"] == "ready", converted["error"]
    assert run.pids("worker") not in ([], [old])


def test_a_killed_edit_service_answers_through_the_gateway_again(run, model):
    versions = f"/api/v1/models/{model}/edit/versions"
    assert run.api("GET", versions)["code"] == 0
    kill_and_wait_restart(run, "edit")
    assert poll(lambda: run.api("GET", versions), lambda body: body["code"] == 0, timeout=120, interval=0.3)["code"] == 0


def test_an_ids_check_queued_while_the_check_worker_was_dead_completes(run, model):
    (old,) = run.pids("checks")
    kill(old)
    started = run.api("POST", f"/api/v1/models/{model}/checks", files={"ids": ("fire.ids", fire_ids(), "application/xml")})
    assert started["code"] == 0, started
    check = poll(lambda: run.api("GET", f"/api/v1/models/{model}/checks/{started['data']['checkId']}")["data"],
                 lambda check: check["status"] in ("done", "failed"), timeout=300, interval=0.3)
    assert check["status"] == "done", check["error"]
    assert run.pids("checks") not in ([], [old])


def test_a_process_that_keeps_dying_is_given_up_loudly_and_ctrl_c_stops_all(tmp_path):
    with socket.socket() as taken:  # the edit service's port, held so that every start of it fails at once
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        running = start_make_run(tmp_path / "d", edit_port=taken.getsockname()[1])
        try:
            poll(running.log_while_running, lambda log: "GAVE UP on edit" in log, timeout=240, interval=0.5)
            assert wait_answering(running)["code"] == 0  # the others keep running
            assert running.pids("gateway") and running.pids("worker") and running.pids("checks")
            assert running.pids("edit") == []
        finally:
            survivors = ctrl_c(running)
    assert survivors == []
    assert "edit entered FATAL state" in running.log
