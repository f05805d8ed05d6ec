"""The gateway and the edit service log in the same zone: UTC, ISO 8601 with the offset, on a host in another zone
(the edit service used to run on Django's default zone, America/Chicago, and to log no time at all)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import datetime, logging, django
django.setup()
logging.getLogger("probe").warning("hello")
print(datetime.datetime.now().astimezone().isoformat())  # the process's local time, which access log lines use
"""
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00"


def service_env(tmp_path: Path, service: str) -> dict:
    env = {**os.environ, "TZ": "Asia/Shanghai", "DJANGO_SETTINGS_MODULE": f"{service}.settings", "VIEWER_DATA_DIR": str(tmp_path)}
    if service == "viewer_gateway":
        config = tmp_path / "server_config.json"
        config.write_text(json.dumps({"dataDir": str(tmp_path)}))
        env["VIEWER_CONFIG"] = str(config)
    return env


@pytest.mark.parametrize("service", ["viewer_gateway", "edit_service"])
def test_logs_in_utc_iso_8601(tmp_path, service):
    run = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=service_env(tmp_path, service), capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert re.fullmatch(rf"{STAMP} WARNING probe: hello", run.stderr.strip().splitlines()[-1])
    assert run.stdout.strip().endswith("+00:00")
