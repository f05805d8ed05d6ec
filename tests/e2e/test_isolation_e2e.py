"""Fail-closed isolation seen from the gateway: when the edit service cannot make a per-run cgroup, a script run
through the gateway is refused with 50200 whose message says why, and nothing changes."""

import pytest

from tests.e2e.stack import Stack
from tests.helpers import MINIMAL_IFC

pytestmark = pytest.mark.e2e

SCRIPT = '''import script_lib as sl

PARAMS = {"name": "Refused"}


def build(params, out_path):
    sl.save(sl.new_model(params["name"]), out_path)
'''


def test_a_script_run_without_isolation_is_refused_through_the_gateway(tmp_path):
    not_a_cgroup = tmp_path / "not-a-cgroup"
    not_a_cgroup.mkdir()
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    stack = Stack(data_dir, workers=0, env={"EDIT_SANDBOX_CGROUP_ROOT": str(not_a_cgroup)}).start()
    try:
        model_id = stack.api("POST", "/api/v1/models", files={"file": ("tiny.ifc", MINIMAL_IFC)}).json()["data"]["id"]
        assert stack.api("PUT", f"/api/v1/models/{model_id}/script", json={"script": SCRIPT}).json()["code"] == 0
        before = (data_dir / "models" / model_id / "model.ifc").read_bytes()
        answer = stack.api("POST", f"/api/v1/models/{model_id}/script/run")
        body = answer.json()
        assert answer.status_code == 502 and body["code"] == 50200
        assert "isolation unavailable" in body["message"] and "HTTP 503" in body["message"]
        assert (data_dir / "models" / model_id / "model.ifc").read_bytes() == before
        assert stack.api("GET", f"/api/v1/models/{model_id}/edit/versions").json()["data"]["versions"] == []
    finally:
        stack.stop()
