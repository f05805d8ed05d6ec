import pytest

from tests.e2e.stack import running_stack


@pytest.fixture
def stack(tmp_path):
    with running_stack(tmp_path) as running:
        yield running


@pytest.fixture(scope="module")
def module_stack(tmp_path_factory):
    """One stack for a module whose tests each make their own models and projects and leave its processes as they
    found them (a module overrides `stack` with it); a start takes 10-40 s here."""
    with running_stack(tmp_path_factory.mktemp("module-stack")) as running:
        yield running
