import json
import subprocess
import sys
from pathlib import Path

import pytest

from viewer_gateway import config as config_module
from viewer_gateway.config import SHIPPED_CONVERTER, ConfigError, load_config
from viewer_gateway.database import postgres_settings

ROOT = Path(__file__).resolve().parents[2]


def write_config(tmp_path, payload) -> dict:
    path = tmp_path / "server_config.json"
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return {"VIEWER_CONFIG": str(path)}


def test_missing_file_means_spec_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config({"VIEWER_CONFIG": str(tmp_path / "absent.json")})
    assert (config.host, config.port, config.maxUploadMB) == ("127.0.0.1", 8090, 200)
    assert config.dataDir == (tmp_path / "../data").resolve()
    assert config.converterScript == ROOT / "converter" / "dist" / "convert.mjs" == SHIPPED_CONVERTER
    assert config.nodeBin == "node"
    assert config.editServiceURL == "http://127.0.0.1:8100"
    assert config.apiToken == "" and config.pgDSN == ""
    assert config.corsOrigins == ("http://localhost:5173", "http://localhost:8080")


def test_default_path_is_server_config_in_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "server_config.json").write_text(json.dumps({"port": 9999}))
    assert load_config({}).port == 9999


def test_relative_paths_resolve_against_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = write_config(tmp_path, {"dataDir": "store", "converterScript": "conv/convert.js"})
    config = load_config(env)
    assert config.dataDir == tmp_path / "store"
    assert config.converterScript == tmp_path / "conv" / "convert.js"


def test_environment_overrides_win_over_the_file(tmp_path):
    env = write_config(tmp_path, {"apiToken": "file", "pgDSN": "dbname=a", "editServiceURL": "http://a:1"})
    env.update(
        VIEWER_API_TOKEN="env-token",
        VIEWER_PG_DSN="postgresql://u@h:5432/db",
        VIEWER_EDIT_SERVICE_URL="http://127.0.0.1:9100/",
        VIEWER_CORS_ORIGINS="https://a.example, https://b.example",
    )
    config = load_config(env)
    assert config.apiToken == "env-token"
    assert config.pgDSN == "postgresql://u@h:5432/db"
    assert config.editServiceURL == "http://127.0.0.1:9100"
    assert config.corsOrigins == ("https://a.example", "https://b.example")


@pytest.mark.parametrize(
    "payload, key",
    [
        ('{"port": 80', "not valid JSON"),
        ("[1, 2]", "top level"),
        ({"port": "8090"}, "port"),
        ({"port": True}, "port"),
        ({"maxUploadMB": -1}, "maxUploadMB"),
        ({"corsOrigins": [1]}, "corsOrigins"),
        ({"dataDirr": "x"}, "dataDirr"),
    ],
)
def test_malformed_file_names_the_key(tmp_path, payload, key):
    with pytest.raises(ConfigError) as error:
        load_config(write_config(tmp_path, payload))
    assert key in str(error.value)


@pytest.mark.heavy
def test_a_malformed_file_is_reported_by_the_system_checks_and_nothing_is_written(tmp_path):
    env = write_config(tmp_path, {"maxUploadMB": "lots"})
    (tmp_path / "cwd").mkdir()  # the default dataDir, ../data, would be tmp_path / "data"
    result = subprocess.run(
        [sys.executable, ROOT / "manage.py", "check"], cwd=tmp_path / "cwd", env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True
    )
    assert result.returncode == 1
    errors = [line.strip() for line in result.stderr.splitlines() if line.startswith(("?:", "\tHINT"))]
    assert errors == [
        '?: (gateway.E001) maxUploadMB: expected number, got "lots"',
        f"HINT: correct the key maxUploadMB in {tmp_path / 'server_config.json'}",
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["cwd", "server_config.json"]


def test_make_run_reads_a_malformed_file_as_one_line(tmp_path):
    env = write_config(tmp_path, {"maxUploadMB": "lots"})
    result = subprocess.run(
        [sys.executable, "-m", "viewer_gateway.config", "dataDir"], cwd=ROOT, env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ['configuration error: maxUploadMB: expected number, got "lots"']


@pytest.mark.parametrize(
    "dsn",
    ["postgresql://alice:secret@db.example:6543/reviews?sslmode=disable", "host=db.example port=6543 dbname=reviews user=alice password=secret sslmode=disable"],
)
def test_both_postgres_dsn_forms(dsn):
    settings = postgres_settings(dsn)
    assert settings["ENGINE"] == "django.db.backends.postgresql"
    assert (settings["NAME"], settings["USER"], settings["PASSWORD"], settings["HOST"], settings["PORT"]) == (
        "reviews", "alice", "secret", "db.example", "6543"
    )
    assert settings["OPTIONS"] == {"sslmode": "disable"}


@pytest.mark.heavy
@pytest.mark.parametrize(
    "config, key",
    [({"converterScript": "/nowhere/convert.js"}, "converterScript"), ({"nodeBin": "no-such-node-binary"}, "nodeBin")],
)
def test_a_converter_that_cannot_run_stops_startup_naming_the_key(tmp_path, config, key):
    """`manage.py check` reports it, and the gateway and the workers refuse to start with the same message."""
    env = write_config(tmp_path, {"dataDir": str(tmp_path / "data"), **config})
    reports = {}
    for command in ("check", "run_gateway", "conversion_worker", "check_worker", "clash_worker"):
        result = subprocess.run(
            [sys.executable, "manage.py", command], cwd=ROOT, env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 1, result.stderr
        reports[command] = [line.strip() for line in result.stderr.splitlines() if line.startswith(("?:", "\tHINT"))]
    first, hint = reports["check"]
    assert first.startswith(f"?: (gateway.E002) {key}:") and hint == f"HINT: correct the key {key} in {tmp_path / 'server_config.json'}"
    assert all(report == reports["check"] for report in reports.values()), reports


def test_make_run_checks_the_converter_in_one_line(tmp_path):
    env = write_config(tmp_path, {"nodeBin": "no-such-node-binary"})
    result = subprocess.run(
        [sys.executable, "-m", "viewer_gateway.config", "--check-converter"], cwd=ROOT, env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ["configuration error: nodeBin: 'no-such-node-binary' is not an executable on PATH (install node >= 18 or set nodeBin)"]


def test_comment_keys_are_ignored_and_allowed_hosts_are_read(tmp_path):
    config = load_config(write_config(tmp_path, {"_comment": "anything", "allowedHosts": "review.example, 10.0.0.5"}))
    assert {"review.example", "10.0.0.5", "127.0.0.1", "localhost"} <= set(config.allowed_host_names())


def test_a_wildcard_listen_address_is_not_an_allowed_host(tmp_path):
    config = load_config(write_config(tmp_path, {"host": "0.0.0.0"}))
    assert "0.0.0.0" not in config.allowed_host_names() and not config.listens_on_loopback
    assert load_config(write_config(tmp_path, {"host": "::1"})).listens_on_loopback


def test_an_unbuilt_shipped_converter_says_how_to_build_it(tmp_path, monkeypatch):
    assert config_module.converter_problem(load_config(write_config(tmp_path, {}))) is None
    unbuilt = tmp_path / "dist" / "convert.mjs"
    monkeypatch.setattr(config_module, "SHIPPED_CONVERTER", unbuilt)
    problem = config_module.converter_problem(load_config(write_config(tmp_path, {"converterScript": str(unbuilt)})))
    assert problem.startswith("converterScript:") and "make setup" in problem


@pytest.mark.heavy
def test_a_network_address_without_a_token_stops_startup(tmp_path):
    """Binding to a non-loopback address with authentication off is refused unless the operator says so."""
    env = write_config(tmp_path, {"dataDir": str(tmp_path / "data"), "host": "0.0.0.0", "port": 1})
    result = subprocess.run([sys.executable, "manage.py", "run_gateway"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "without an apiToken" in result.stderr and "VIEWER_ALLOW_ANONYMOUS_NETWORK" in result.stderr
