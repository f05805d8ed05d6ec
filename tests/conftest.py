import dataclasses
import gc
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tests.fake_openai import FakeOpenAI
from tests.post_migrate_rows import PostMigrateRows
from tests.processes import kill_survivors


@pytest.fixture(scope="module")
def fake():
    """A local OpenAI-compatible server (tests/fake_openai.py) for the module's tests; script it with fake.script()."""
    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def viewer_config(settings):
    """Replace parts of the gateway configuration for one test: viewer_config(apiToken="t")."""

    def apply(**changes):
        settings.VIEWER = dataclasses.replace(settings.VIEWER, **changes)
        return settings.VIEWER

    return apply


@pytest.fixture(autouse=True)
def empty_cache():
    """Each test starts with no counts in the cache (the token throttle keeps its counts there)."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def empty_data_dir(settings):
    """Each test starts with no model folders and no upload leftovers."""
    import shutil
    from pathlib import Path

    yield
    (Path(settings.DATA_DIR) / "accounts-enabled").unlink(missing_ok=True)  # the first user's marker (accounts_app.mode)
    for folder in (Path(settings.MODELS_DIR), Path(settings.UPLOAD_TMP_DIR), Path(settings.DATA_DIR) / "trash"):
        for child in folder.iterdir() if folder.is_dir() else ():
            shutil.rmtree(child) if child.is_dir() else child.unlink()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, with the rows post_migrate makes put back after each flush instead of made
    again (tests/post_migrate_rows.py)."""
    from django.db import DEFAULT_DB_ALIAS

    rows = PostMigrateRows()
    with django_db_blocker.unblock():
        rows.install([DEFAULT_DB_ALIAS])  # the one database of the settings (another would keep Django's signal)
    try:
        yield
        rows.uninstall()
    finally:
        # A thread's connection closes when the garbage collector frees it (Django's DatabaseWrapper sits in reference
        # cycles), not when the thread ends: the pool threads of the event loops async_to_sync makes for the chat turns
        # run here left ~10 open, and PostgreSQL refused to drop the test database ("being accessed by other users").
        gc.collect()


def pytest_configure(config):
    """Under pytest-xdist the workers share one migrated database for the stacks' new data directories, in the run's
    temporary folder (a worker's own is a folder in it)."""
    if hasattr(config, "workerinput") and config.option.basetemp:
        from tests.e2e import stack

        stack.SHARED_TEMPLATE_HOME = Path(config.option.basetemp).parent


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """No process started by the suite outlives it; one that had to be killed here fails the run. Under pytest-xdist
    each worker sweeps its own processes; the controller, whose marker the workers themselves carry, does not. Last:
    after pytest has torn down what is still set up (the session-scoped stacks of a run cut short by -x or Ctrl-C)."""
    if session.config.pluginmanager.hasplugin("dsession"):
        return
    survivors = kill_survivors()
    if survivors:
        session.config.pluginmanager.get_plugin("terminalreporter").write_line(
            "processes started by the tests were still running and have been killed:\n  " + "\n  ".join(survivors), red=True
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """pytest-django sorts the whole run into database / transactional / other tests, which splits a module that has
    some of each and sets its module-scoped fixtures (a stack of real processes, an OpenID provider) up once per
    part. Each module's tests are gathered again where its first one stands, keeping pytest-django's order inside.

    The modules that start real processes come first, then the heavy ones, then the rest: pytest-xdist hands whole
    modules to its workers in this order (`--dist loadfile`), so the run ends on many short modules that even out
    between the workers instead of one worker finishing a long end-to-end module while the other waits."""
    first_of_module: dict = {}
    weight_of_module: dict = {}
    for index, item in enumerate(items):
        first_of_module.setdefault(item.path, index)
        weight_of_module[item.path] = min(weight_of_module.get(item.path, 2), _weight(item))
    items.sort(key=lambda item: (weight_of_module[item.path], first_of_module[item.path]))


def _weight(item) -> int:
    if item.get_closest_marker("e2e") or {"browser", "e2e"} & set(item.path.relative_to(Path(__file__).parent).parts[:1]):
        return 0
    return 1 if item.get_closest_marker("heavy") else 2
