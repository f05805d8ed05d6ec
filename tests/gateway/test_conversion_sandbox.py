"""Conversions run confined (real bubblewrap, real cgroups): code running in either stage's sandbox cannot read the
gateway's configuration, the data directory or another model, cannot reach the network and cannot write anywhere;
an over-allocating conversion is killed at the memory cap; without a cgroup conversions are refused unless the
operator opted in."""

import json
import socket
import textwrap
import threading

import pytest

from models_app.conversion import sandbox
from models_app.conversion.runner import run_pipeline
from sandboxing.limits import python_command
from sandboxing.probe import run_sandbox
from tests.helpers import MINIMAL_IFC, sample
from viewer_gateway.config import SHIPPED_CONVERTER


@pytest.fixture
def gateway_files(tmp_path):
    """A configuration file with secrets and a data directory holding another model, as a deployment has them."""
    data = tmp_path / "data"
    other = data / "models" / "m_00000000000000bb"
    other.mkdir(parents=True)
    (other / "model.ifc").write_text("ISO-10303-21; the other model")
    config = tmp_path / "server_config.json"
    config.write_text(json.dumps({"apiToken": "TOP-SECRET-TOKEN", "llmAPIKey": "sk-SECRET", "dataDir": str(data)}))
    return {"config": config, "data": data, "other": other / "model.ifc"}


@pytest.fixture
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    yield server.getsockname()[1], accepted
    server.close()


PYTHON_PROBE = """
import json, os, socket, sys
targets = json.loads(sys.argv[1])
found = {}
for name in ("config", "other"):
    try:
        found[name] = open(targets[name]).read()
    except OSError as exc:
        found[name] = exc.strerror
try:
    found["data"] = os.listdir(targets["data"])
except OSError as exc:
    found["data"] = exc.strerror
try:
    socket.create_connection(("127.0.0.1", targets["port"]), timeout=3)
    found["network"] = "connected"
except OSError as exc:
    found["network"] = type(exc).__name__
found["writable"] = []
for folder in ("/", "/tmp", "/dev", "/dev/shm", "/sandbox/lib/models_app", os.path.dirname(targets["config"]), targets["data"]):
    try:
        open(os.path.join(folder, "planted"), "w").close()
        found["writable"].append(folder)
    except OSError:
        pass
found["uid"] = os.getuid()
print(json.dumps(found))
"""


def test_the_ifcopenshell_stage_sandbox_sees_no_secret_no_model_no_network(gateway_files, listener):
    port, accepted = listener
    targets = {**{k: str(v) for k, v in gateway_files.items()}, "port": port}
    command = python_command(sandbox.ConversionLimits(), ["-c", PYTHON_PROBE, json.dumps(targets)], packages=("models_app",))
    done = run_sandbox(command, rlimits=sandbox.ConversionLimits().rlimits(), timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["config"] == found["other"] == found["data"] == "No such file or directory"
    assert found["network"] != "connected" and accepted == []
    assert found["writable"] == [] and found["uid"] == 65534
    assert not list(gateway_files["data"].rglob("planted")) and not (gateway_files["config"].parent / "planted").exists()


NODE_PROBE = """
import fs from "node:fs";
import net from "node:net";
const targets = TARGETS;
const found = {};
for (const name of ["config", "other"]) {
  try { found[name] = fs.readFileSync(targets[name], "utf-8"); } catch (err) { found[name] = err.code; }
}
try { found.data = fs.readdirSync(targets.data); } catch (err) { found.data = err.code; }
found.writable = [];
for (const folder of ["/", "/tmp", "/dev", targets.work, targets.data]) {
  try { fs.writeFileSync(`${folder}/planted`, "x"); found.writable.push(folder); } catch (err) { /* refused */ }
}
const socket = net.connect(targets.port, "127.0.0.1");
const report = (outcome) => { found.network = outcome; console.error(JSON.stringify(found)); process.exit(1); };
socket.on("connect", () => report("connected"));
socket.on("error", (err) => report(err.code));
setTimeout(() => report("timeout"), 5000);
"""


def test_the_converter_stage_sandbox_sees_no_secret_no_model_no_network(gateway_files, listener, tmp_path):
    """A converter (as a compromised xeokit-convert would) probes what it can reach; its stderr becomes the error."""
    port, accepted = listener
    work = tmp_path / "work"
    work.mkdir()
    targets = {**{k: str(v) for k, v in gateway_files.items()}, "port": port, "work": str(work)}
    probe_dir = tmp_path / "converter"
    probe_dir.mkdir()
    (probe_dir / "probe.mjs").write_text(NODE_PROBE.replace("TARGETS", json.dumps(targets)))
    ifc = work / "model.ifc"
    ifc.write_bytes(MINIMAL_IFC)
    result = run_pipeline(ifc, work, node_bin="node", converter_script=probe_dir / "probe.mjs", timeout_seconds=60,
                          on_progress=lambda *_: None, protected=[gateway_files["config"], gateway_files["data"]])
    assert not result.ok
    found = json.loads(result.error[result.error.index("{"):result.error.rindex("}") + 1])
    assert found["config"] == found["other"] == found["data"] == "ENOENT"
    assert found["writable"] == [] and found["network"] != "connected" and accepted == []
    assert not list(tmp_path.rglob("planted"))


def test_a_converter_in_a_folder_holding_the_configuration_is_refused(gateway_files, tmp_path):
    converter = gateway_files["config"].parent / "convert.mjs"
    converter.write_text("console.log('must not run');")
    ifc = tmp_path / "model.ifc"
    ifc.write_bytes(MINIMAL_IFC)
    (tmp_path / "out").mkdir()
    result = run_pipeline(ifc, tmp_path / "out", node_bin="node", converter_script=converter, timeout_seconds=60,
                          on_progress=lambda *_: None, protected=[gateway_files["config"]])
    assert not result.ok and "converterScript" in result.error and "server_config.json" in result.error


def test_the_ifcopenshell_stage_is_killed_at_the_memory_cap(tmp_path):
    (tmp_path / "out").mkdir()
    result = run_pipeline(sample("duplex.ifc"), tmp_path / "out", node_bin="node", converter_script=SHIPPED_CONVERTER,
                          timeout_seconds=120, on_progress=lambda *_: None, limits=sandbox.ConversionLimits(memory_mb=16))
    assert not result.ok
    assert "the ifcopenshell stage exceeded the conversion memory cap of 16 MB" in result.error and "conversionMemoryMB" in result.error
    assert not (tmp_path / "out" / "model.xkt").exists()


def test_the_converter_stage_is_killed_at_the_memory_cap(tmp_path):
    hog = tmp_path / "hog.mjs"
    hog.write_text(textwrap.dedent("""
        const blocks = [];
        for (let i = 0; i < 64; i++) blocks.push(Buffer.alloc(16 * 1024 * 1024, 1));
        console.log("held", blocks.length);
    """))
    ifc = tmp_path / "model.ifc"
    ifc.write_bytes(MINIMAL_IFC)
    (tmp_path / "out").mkdir()
    result = run_pipeline(ifc, tmp_path / "out", node_bin="node", converter_script=hog, timeout_seconds=120,
                          on_progress=lambda *_: None, limits=sandbox.ConversionLimits(memory_mb=256))
    assert not result.ok
    assert "xeokit-convert exceeded the conversion memory cap of 256 MB" in result.error


@pytest.mark.parametrize("root", ["plain-folder", "missing"])
def test_without_a_cgroup_conversions_are_refused(tmp_path, root):
    cgroup_root = tmp_path / root
    if root == "plain-folder":
        cgroup_root.mkdir()
    ifc = tmp_path / "model.ifc"
    ifc.write_bytes(MINIMAL_IFC)
    (tmp_path / "out").mkdir()
    result = run_pipeline(ifc, tmp_path / "out", node_bin="node", converter_script=SHIPPED_CONVERTER, timeout_seconds=60,
                          on_progress=lambda *_: None, limits=sandbox.ConversionLimits(cgroup_root=str(cgroup_root)))
    assert not result.ok
    assert "isolation unavailable" in result.error and "conversionAllowNoCgroup" in result.error
    assert list((tmp_path / "out").iterdir()) == []


def test_the_operator_may_allow_conversions_without_a_cgroup(tmp_path):
    (tmp_path / "out").mkdir()
    limits = sandbox.ConversionLimits(cgroup_root=str(tmp_path), allow_no_cgroup=True)
    result = run_pipeline(sample("IfcOpenHouse_IFC4.ifc"), tmp_path / "out", node_bin="node", converter_script=SHIPPED_CONVERTER,
                          timeout_seconds=120, on_progress=lambda *_: None, limits=limits)
    assert result.ok, result.error
    assert (tmp_path / "out" / "model.xkt").stat().st_size > 0
    assert "WITHOUT a cgroup" in limits.cgroup_policy.startup_line("conversions")
