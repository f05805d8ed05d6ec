"""Starts the real processes (gateway, conversion workers, edit service) on free ports with a temporary
data directory, the way `make run` does, and talks HTTP to them."""

from __future__ import annotations

import atexit
import fcntl
import functools
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import requests

from core.service_secret import HEADER as SECRET_HEADER
from core.service_secret import read_secret
from tests.helpers import poll
from tests.processes import signal_group, spawn, stop

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_migrate(env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)


# A folder the test processes of one run share (set by tests/conftest.py under pytest-xdist: the run's temporary
# folder, which pytest removes in time); None: each process keeps its template to itself.
SHARED_TEMPLATE_HOME: Path | None = None


def _migrate_sqlite(folder: Path) -> Path:
    """A SQLite database with every migration applied, made by the real `manage.py migrate` in `folder`."""
    (folder / "server_config.json").write_text(json.dumps({"dataDir": str(folder)}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIEWER_", "DJANGO_"))}
    _run_migrate({**env, "VIEWER_CONFIG": str(folder / "server_config.json"), "VIEWER_DATA_DIR": str(folder)})
    return folder / "viewer.sqlite3"


@functools.cache
def _migrated_template() -> Path:
    """The migrated database new SQLite data directories start from: made once per run when the test processes share
    a folder (the first to need it migrates while the others wait on the lock; a migrate from nothing takes 20 s to
    2 min here), else once per test process in a directory of its own, removed when the process ends."""
    if SHARED_TEMPLATE_HOME is None:
        folder = Path(tempfile.mkdtemp(prefix="viewer-migrated-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        return _migrate_sqlite(folder)
    template = SHARED_TEMPLATE_HOME / "migrated.sqlite3"
    with open(SHARED_TEMPLATE_HOME / "migrated.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.exists():  # moved into place only once complete: a failed migrate leaves none behind
            os.rename(_migrate_sqlite(Path(tempfile.mkdtemp(prefix="migrating-", dir=SHARED_TEMPLATE_HOME))), template)
    return template


def _copy_sqlite(source: Path, target: Path) -> None:
    with closing(sqlite3.connect(source)) as origin, closing(sqlite3.connect(target)) as copy:
        origin.backup(copy)


def seed_migrated_database(data_dir: Path) -> None:
    """Gives a new data directory the run's migrated SQLite database, so that what starts on it (a Stack, `make run`)
    finds nothing to migrate (migrating from nothing takes 10-20 s of processor time)."""
    _copy_sqlite(_migrated_template(), data_dir / "viewer.sqlite3")


class Stack:
    def __init__(self, data_dir: Path, *, workers: int = 2, token: str = "", config: dict | None = None, env: dict | None = None):
        self.data_dir = data_dir
        self.port = free_port()
        self.edit_port = free_port()
        self.token = token
        self.config_path = data_dir / "server_config.json"
        self.config_path.write_text(json.dumps({
            "port": self.port,
            "dataDir": str(data_dir),
            "editServiceURL": f"http://127.0.0.1:{self.edit_port}",
            "apiToken": token,
            **(config or {}),
        }))
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("VIEWER_", "DJANGO_"))},
            "VIEWER_CONFIG": str(self.config_path),
            "VIEWER_DATA_DIR": str(data_dir),
            "EDIT_SERVICE_PORT": str(self.edit_port),
            "PYTHONUNBUFFERED": "1",
            "DIE_WITH_PARENT": "1",
            **(env or {}),
        }
        if os.environ.get("VIEWER_PG_DSN") and os.environ.get("E2E_USE_PG"):
            self.env["VIEWER_PG_DSN"] = os.environ["VIEWER_PG_DSN"]
        self.worker_count = workers
        self.processes: dict[str, subprocess.Popen] = {}
        self.session = requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _spawn(self, name: str, *args: str) -> subprocess.Popen:
        with open(self.data_dir / f"{name}.log", "ab") as log:
            process = spawn([sys.executable, *args], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.processes[name] = process
        return process

    def migrate(self) -> None:
        """A new SQLite data directory gets a copy of a database migrated once per run (`manage.py migrate` from
        nothing takes 20 s to 2 min here, and the suite starts dozens of stacks); an existing database, or PostgreSQL,
        is migrated by `manage.py migrate` as `make run` does."""
        database = self.data_dir / "viewer.sqlite3"
        if "VIEWER_PG_DSN" not in self.env and not database.exists():
            seed_migrated_database(self.data_dir)
            return
        _run_migrate(self.env)

    def start(self) -> "Stack":
        """Starts the gateway and the edit service side by side and, once both answer, the job workers (not waited for,
        as before). Side by side they answer in ~12 s here against ~17 s one after the other; starting the workers with
        them too was slower (~21 s: four processes booting on two cores). On a failure the processes started are
        stopped."""
        try:
            self.migrate()
            gateway = self.spawn_gateway()
            edit = self.spawn_edit_service()
            self.wait_http(f"{gateway}/api/v1/models")
            self.wait_http(f"{edit}/health")
            self.start_workers()
        except BaseException:
            self.stop()
            raise
        return self

    def start_gateway(self, name: str = "gateway", port: int | None = None) -> str:
        """One more gateway process on the same data directory and database (another port), once it answers."""
        url = self.spawn_gateway(name, port)
        self.wait_http(f"{url}/api/v1/models")
        return url

    def spawn_gateway(self, name: str = "gateway", port: int | None = None) -> str:
        """Starts a gateway process and returns its URL without waiting for it."""
        port = port or self.port
        env = {**self.env}
        if port != self.port:
            config = {**json.loads(self.config_path.read_text()), "port": port}
            path = self.data_dir / f"{name}.server_config.json"
            path.write_text(json.dumps(config))
            env["VIEWER_CONFIG"] = str(path)
        with open(self.data_dir / f"{name}.log", "ab") as log:
            self.processes[name] = spawn([sys.executable, "manage.py", "run_gateway"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        return f"http://127.0.0.1:{port}"

    @property
    def edit_url(self) -> str:
        return f"http://127.0.0.1:{self.edit_port}"

    def start_edit_service(self, name: str = "edit", port: int | None = None, extra_env: dict | None = None) -> str:
        url = self.spawn_edit_service(name, port, extra_env)
        self.wait_http(f"{url}/health")
        return url

    def spawn_edit_service(self, name: str = "edit", port: int | None = None, extra_env: dict | None = None) -> str:
        """Starts an edit service process and returns its URL without waiting for it."""
        port = port or self.edit_port
        env = {**self.env, "EDIT_SERVICE_PORT": str(port), **(extra_env or {})}
        with open(self.data_dir / f"{name}.log", "ab") as log:
            self.processes[name] = spawn([sys.executable, "-m", "edit_service"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        return f"http://127.0.0.1:{port}"

    @property
    def edit_headers(self) -> dict[str, str]:
        """What a trusted direct caller on the host sends: the service secret, read from the data directory."""
        return {SECRET_HEADER: read_secret(self.data_dir)}

    def edit_call(self, method: str, path: str, *, headers: dict | None = None, **kwargs) -> requests.Response:
        """A direct call to the edit service, with the service secret."""
        kwargs.setdefault("timeout", 120)
        return requests.request(method, self.edit_url + path, headers={**self.edit_headers, **(headers or {})}, **kwargs)

    def kill(self, name: str, sig=signal.SIGKILL) -> None:
        stop(self.processes.pop(name), sig)

    # An idle worker's poll of its queue: the workers wake at once when a task is enqueued on this host
    # (core.jobs.wakeup), so the poll is only the fallback, and polling every 0.2 s cost each idle worker 2 % of a core.
    IDLE_POLL_SECONDS = "5"

    def start_workers(self) -> None:
        for index in range(self.worker_count):
            self._spawn(f"worker{index}", "manage.py", "conversion_worker", "--interval", self.IDLE_POLL_SECONDS, "--recovery-interval", "2")

    def start_check_worker(self, name: str = "checks0") -> subprocess.Popen:
        return self._spawn(name, "manage.py", "check_worker", "--interval", self.IDLE_POLL_SECONDS, "--recovery-interval", "1")

    def wait_worker_polling(self, name: str, timeout: float = 120) -> None:
        """Until the job worker `name` polls its queue: the work of its start is done (a check worker's zygote warmed)."""
        log = self.data_dir / f"{name}.log"
        poll(lambda: log.exists() and "Starting worker" in log.read_text(errors="replace"), bool, timeout=timeout, interval=0.2)

    def start_clash_worker(self, name: str = "clashes0") -> subprocess.Popen:
        return self._spawn(name, "manage.py", "clash_worker", "--interval", self.IDLE_POLL_SECONDS, "--recovery-interval", "1")

    def kill_workers(self, sig=signal.SIGKILL) -> None:
        for name in [name for name in self.processes if name.startswith("worker")]:
            self.kill(name, sig)

    def wait_http(self, url: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.session.get(url, timeout=2).status_code < 500:
                    return
            except requests.RequestException:  # not listening yet, or still starting up
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{url} did not come up; logs in {self.data_dir}")

    def api(self, method: str, path: str, **kwargs) -> requests.Response:
        return self.session.request(method, self.url + path, timeout=120, **kwargs)

    def wait_model(self, model_id: str, timeout: float = 300, until=("ready", "failed")) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            model = self.api("GET", f"/api/v1/models/{model_id}").json()["data"]
            if model["status"] in until:
                return model
            time.sleep(0.2)
        raise TimeoutError(f"model {model_id} still {model['status']} after {timeout} s")

    def count_rows(self, where: dict[str, str]) -> dict[str, int]:
        """table -> number of rows matching the SQL condition, read from the stack's SQLite database."""
        with sqlite3.connect(self.data_dir / "viewer.sqlite3") as database:
            return {table: database.execute(f"SELECT COUNT(*) FROM {table} WHERE {condition}").fetchone()[0] for table, condition in where.items()}

    def stop(self) -> None:
        for process in self.processes.values():
            signal_group(process.pid, signal.SIGTERM)  # all at once: none waits for another to finish
        for process in self.processes.values():
            stop(process)
        self.processes.clear()


@contextmanager
def running_stack(data_dir: Path, **options) -> Iterator[Stack]:
    """A started Stack (options as for Stack), stopped when the block ends, however it ends."""
    stack = Stack(data_dir, **options).start()
    try:
        yield stack
    finally:
        stack.stop()
