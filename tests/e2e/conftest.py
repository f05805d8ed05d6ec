import pytest

from tests.e2e.stack import Stack


@pytest.fixture
def stack(tmp_path):
    running = Stack(tmp_path).start()
    yield running
    running.stop()
