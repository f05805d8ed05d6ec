"""Waiting for a sandbox slot, on the real bubblewrap: a bounded queue shared round robin between requesters (models),
so one model's flood of CPU loops cannot starve another model's run; a full queue answers 503 + Retry-After at once."""

import threading

import pytest

from edit_service.engine.errors import SandboxBusy
from edit_service.engine.sandbox import INPUT_MOUNT, Sandbox, SandboxLimits
from edit_service.errors import detail_exception_handler
from tests.helpers import poll

# a CPU loop that ends when the test opens its gate (a file in a host folder bound read-only into the run)
GATED_LOOP = f"import os, sys\nwhile not os.path.exists('{INPUT_MOUNT}/gates/' + sys.argv[1]):\n    pass\n"


class Runs:
    """Sandbox runs in threads; `finished` lists their labels in the order they returned."""

    def __init__(self, limits: SandboxLimits, gates, tmp_path):
        self.limits, self.gates, self.tmp_path = limits, gates, tmp_path
        self.finished: list[str] = []
        self.failed: dict[str, BaseException] = {}
        self.threads: list[threading.Thread] = []

    def execute(self, requester: str, label: str, gated: bool = True):
        run_dir = self.tmp_path / "runs" / label
        run_dir.mkdir(parents=True)
        program = GATED_LOOP if gated else "pass\n"
        outcome = Sandbox(self.limits, requester).execute(run_dir, ["-c", program, label], inputs={"gates": self.gates}, outputs=())
        assert outcome.returncode == 0 and not outcome.timed_out, outcome.stderr_tail

    def start(self, requester: str, label: str, gated: bool = True) -> None:
        def target():
            try:
                self.execute(requester, label, gated)
                self.finished.append(label)
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                self.failed[label] = exc

        thread = threading.Thread(target=target, name=label)
        thread.start()
        self.threads.append(thread)

    def open(self, *labels: str) -> None:
        for label in labels:
            (self.gates / label).touch()

    def join(self) -> None:
        for thread in self.threads:
            thread.join()


@pytest.fixture
def runs(tmp_path):
    gates = tmp_path / "gates"
    gates.mkdir()
    # bounds of their own: the slots of this process are shared by every Sandbox with the same bounds
    limits = SandboxLimits(wall_seconds=120, concurrent_runs=2, queued_runs=7, queued_runs_per_requester=6)
    started = Runs(limits, gates, tmp_path)
    yield started
    started.open(*(f"a{i}" for i in range(9)))  # whatever happened, no loop is left running
    started.join()


def test_a_flooding_model_cannot_starve_another_models_run(runs):
    slots = Sandbox(runs.limits).slots()
    for label in ("a0", "a1"):
        runs.start("model-a", label)
    poll(lambda: slots.free, lambda free: free == 0, timeout=60)
    for number in range(2, 8):  # six more CPU loops of model A wait, in this order
        runs.start("model-a", f"a{number}")
        poll(lambda: slots.waiting("model-a"), lambda waiting, n=number: waiting == n - 1, timeout=60)

    with pytest.raises(SandboxBusy) as refused:  # model A's share of the queue is full
        runs.execute("model-a", "a8")
    assert refused.value.retry_after >= 1 and "this model has 6 runs waiting" in refused.value.detail
    assert f"retry after {refused.value.retry_after} s" in refused.value.detail

    runs.start("model-b", "b0", gated=False)  # a normal run of another model
    poll(lambda: slots.waiting("model-b"), lambda waiting: waiting == 1, timeout=60)
    with pytest.raises(SandboxBusy) as full:  # the whole queue is full
        runs.execute("model-c", "c0", gated=False)
    assert "7 runs are waiting (at most 7)" in full.value.detail

    runs.open("a0")  # a slot frees: model A waited first, its next loop takes it ...
    poll(lambda: slots.waiting("model-a"), lambda waiting: waiting == 5, timeout=60)
    runs.open("a1")  # ... the next slot goes to model B, not to A's five others
    poll(lambda: runs.finished, lambda finished: "b0" in finished, timeout=120)
    assert slots.waiting("model-a") == 4 and set(runs.finished) <= {"a0", "a1", "b0"}
    assert not runs.failed

    runs.open(*(f"a{i}" for i in range(2, 8)))
    runs.join()
    assert not runs.failed and sorted(runs.finished) == sorted([*(f"a{i}" for i in range(8)), "b0"])
    assert slots.free == 2 and slots.waiting() == 0


def test_a_busy_refusal_answers_503_with_retry_after():
    response = detail_exception_handler(SandboxBusy("the sandbox is busy: 7 runs are waiting (at most 7); retry after 12 s", 12), {})
    assert response.status_code == 503 and response["Retry-After"] == "12"
    assert response.data == {"detail": "the sandbox is busy: 7 runs are waiting (at most 7); retry after 12 s"}


def test_the_queue_bounds_come_from_the_environment():
    limits = SandboxLimits.from_environment({"EDIT_SANDBOX_QUEUED_RUNS": "3", "EDIT_SANDBOX_QUEUED_RUNS_PER_REQUESTER": "2"})
    assert (limits.queued_runs, limits.queued_runs_per_requester) == (3, 2)
    assert (SandboxLimits.from_environment({}).queued_runs, SandboxLimits.from_environment({}).queued_runs_per_requester) == (16, 4)
