"""A user's script is parsed only under caps, on a real edit-service process: a script over the size limit is refused
before it is parsed; one under it that is costly to analyse is stopped by the analysis child's memory cap with 422;
the service's own memory stays flat all along and it keeps answering; its analysis children end with it."""

import secrets
import signal
import threading

import psutil
import pytest

from tests.edit_service.conftest import example
from tests.edit_service.test_api import EditService
from tests.helpers import poll

pytestmark = pytest.mark.e2e

ANALYSIS_MEMORY_MB = 128
# the edit service's own growth while it answers; parsing the 4 MB script in-process takes several hundred MB
SERVICE_GROWTH_CAP = 100 * 1024 * 1024
CONTRACT = "PARAMS = {'name': 'x'}\n\n\ndef build(params, out_path):\n    pass\n"


class PeakMemory:
    """The highest resident size of a process while the block runs (sampled from another thread)."""

    def __init__(self, pid: int):
        self.process = psutil.Process(pid)
        self.peak = self.process.memory_info().rss
        self._done = threading.Event()

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample)
        self._thread.start()
        return self

    def _sample(self):
        while not self._done.wait(0.01):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    running = EditService(tmp_path_factory.mktemp("caps"), SCRIPT_ANALYSIS_MEMORY_MB=str(ANALYSIS_MEMORY_MB)).start()
    yield running
    running.stop()


def _warm(service, model) -> int:
    """Stages a normal script (the service's lazy imports and its analysis child are up); the service's RSS then."""
    assert service.call("PUT", f"{model}/script", json={"script": example("small_house")}).status_code == 200
    return psutil.Process(service.process.pid).memory_info().rss


def test_a_script_over_the_size_limit_is_refused_before_it_is_parsed(service, model):
    baseline = _warm(service, model)
    large = CONTRACT + "".join(f"w{i} = create_entity(model, 'IfcWall', 'w{i}', name='Wall {i}', x={i} * 0.5)\n" for i in range(60_000))
    assert len(large) > 4_000_000
    with PeakMemory(service.process.pid) as memory:
        response = service.call("PUT", f"{model}/script", json={"script": large})
    assert response.status_code == 422
    assert "scripts may be at most 256 KB" in response.json()["detail"]
    assert memory.peak - baseline < SERVICE_GROWTH_CAP, f"the service grew by {(memory.peak - baseline) >> 20} MB"
    assert service.call("GET", f"{model}/script").json()["script"] == example("small_house")


def test_a_script_too_complex_to_analyse_is_stopped_by_the_childs_cap(service, model):
    baseline = _warm(service, model)
    # 100 KB: well under the size limit; ast reads it at once, libcst's tree of it needs several hundred MB
    dense = CONTRACT + "TABLE = (" + "a," * 50_000 + ")\n"
    staged = service.call("PUT", f"{model}/script", json={"script": dense})
    assert staged.status_code == 200
    with PeakMemory(service.process.pid) as memory:
        response = service.call("PUT", f"{model}/script", json={"params": {"name": "y"}})  # a PARAMS rewrite: libcst
    assert response.status_code == 422
    assert response.json()["detail"] == f"the script is too complex to analyse within {ANALYSIS_MEMORY_MB} MB / 20 s"
    assert memory.peak - baseline < SERVICE_GROWTH_CAP, f"the service grew by {(memory.peak - baseline) >> 20} MB"
    assert service.call("GET", f"{model}/script").json() == staged.json()  # the refused rewrite staged nothing

    # the service keeps answering, and a fresh child analyses the next script
    assert service.call("GET", "/health").status_code == 200
    assert service.call("PUT", f"{model}/script", json={"script": example("small_house")}).status_code == 200
    response = service.call("PUT", f"{model}/script", json={"params": {"name": "Renamed"}})
    assert response.status_code == 200 and "'Renamed'" not in response.json()["script"] and '"Renamed"' in response.json()["script"]


def test_the_analysis_children_end_with_the_service(tmp_path):
    own = EditService(tmp_path).start()
    try:
        model_id = "m_" + secrets.token_hex(8)
        (tmp_path / "models" / model_id).mkdir(parents=True)
        _warm(own, f"/models/{model_id}")
        children = [c for c in psutil.Process(own.process.pid).children(recursive=True) if "core.script_analysis" in " ".join(c.cmdline())]
        assert children
    finally:
        own.stop(sig=signal.SIGKILL)  # no chance to clean up: the kernel ends the children (PR_SET_PDEATHSIG)
    poll(lambda: [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE], lambda alive: alive == [], timeout=30)
