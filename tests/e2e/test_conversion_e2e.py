import json
import time

import psutil
import pytest

from tests.helpers import sample, sample_files, step_instances, xkt_entity_ids
from tests.processes import still_running

pytestmark = pytest.mark.e2e

PRODUCT_SCHEMAS = {"IFC2X3": "IFC2X3", "IFC4": "IFC4", "IFC4X3_RC2": "IFC4X3_ADD2"}


def product_guids(path) -> set[str]:
    """GlobalIds of every IfcProduct in the file, read from the STEP text with the schema's class hierarchy (so the
    count is independent of the conversion path, including schemas ifcopenshell cannot open)."""
    import ifcopenshell.ifcopenshell_wrapper as wrapper

    head = path.read_bytes()[:4096].decode("latin-1")
    schema_name = head.split("FILE_SCHEMA", 1)[1].split("'")[1].upper()
    schema = wrapper.schema_by_name(PRODUCT_SCHEMAS[schema_name])

    def is_product(class_name: str) -> bool:
        declaration = schema.declaration_by_name(class_name)
        while declaration is not None:
            if declaration.name() == "IfcProduct":
                return True
            declaration = declaration.supertype()
        return False

    return {guid for cls, guid in step_instances(path) if is_product(cls)}


def _converting(process: psutil.Process) -> bool:
    """Whether a worker is running a conversion: a child of its zygote (the ifcopenshell stage) or a converter."""
    for child in process.children(recursive=True):
        try:
            line, parent = " ".join(child.cmdline()), child.parent()
            if "convert.mjs" in line and child.name() != "bwrap":
                return True
            if "conversion.zygote" in line and child.name() != "bwrap" and parent.name() != "bwrap":
                return True
        except psutil.Error:
            continue
    return False


def test_every_sample_converts_with_consistent_ids(stack):
    files = sample_files()
    assert files, "../shared/ifc-samples is missing"
    uploaded = {}
    for path in files:
        with open(path, "rb") as handle:
            response = stack.api("POST", "/api/v1/models", files={"file": (path.name, handle)})
        body = response.json()
        assert body["code"] == 0, body
        assert body["data"]["status"] == "converting"
        uploaded[path] = body["data"]["id"]

    for path, model_id in uploaded.items():
        model = stack.wait_model(model_id)
        assert model["status"] == "ready", (path.name, model["error"])
        metadata = stack.api("GET", f"/v1/models/{model_id}/metadata.json").json()
        xkt = stack.api("GET", f"/v1/models/{model_id}/model.xkt").content
        all_guids = {guid for _, guid in step_instances(path)}
        meta_ids = {o["id"] for o in metadata["metaObjects"]}
        entity_ids = xkt_entity_ids(xkt)
        assert entity_ids, path.name
        assert set(entity_ids) <= all_guids, path.name
        assert set(entity_ids) <= meta_ids, path.name
        products = product_guids(path)
        assert len(metadata["metaObjects"]) == len(products) + 1, path.name  # + the IfcProject root
        assert meta_ids - products == {metadata["projectId"]}, path.name
        pset_ids = {p["id"] for p in metadata["propertySets"]}
        dangling = [i for o in metadata["metaObjects"] for i in o.get("propertySetIds", ()) if i not in pset_ids]
        assert dangling == [], path.name

        # every sample is read by ifcopenshell (IFC4X3_RC2 as IFC4X3_ADD2), so each has the values of its elements
        values = json.loads((stack.data_dir / "models" / model_id / "element-values.json").read_text())
        assert set(values) == products, path.name
        names = {o["id"]: o["name"] for o in metadata["metaObjects"]}
        assert all(v.get("Name", "") == names[guid] for guid, v in values.items()), path.name

        ranged = stack.api("GET", f"/v1/models/{model_id}/model.xkt", headers={"Range": "bytes=0-15"})
        assert ranged.status_code == 206 and ranged.content == xkt[:16]

    listed = [m["id"] for m in stack.api("GET", "/api/v1/models").json()["data"]]
    assert listed == list(uploaded.values())[::-1]


def test_killed_worker_conversion_resumes_after_restart(stack):
    path = sample("duplex.ifc")
    with open(path, "rb") as handle:
        model_id = stack.api("POST", "/api/v1/models", files={"file": (path.name, handle)}).json()["data"]["id"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        progress = stack.api("GET", f"/api/v1/models/{model_id}").json()["data"]["progress"]
        if progress and progress["phase"] in ("reading", "metadata", "geometry"):
            break
        time.sleep(0.05)
    else:
        pytest.fail("the conversion never started")

    started = [child for name, process in stack.processes.items() if name.startswith("worker")
               for child in psutil.Process(process.pid).children(recursive=True)]
    assert started, "the workers keep their sandboxed zygotes"
    stack.kill_workers()
    assert still_running(started, timeout=10) == [], "the pipeline (zygote, forked stage, converter) must die with its worker"
    assert stack.api("GET", f"/api/v1/models/{model_id}").json()["data"]["status"] == "converting"

    stack.start_workers()
    model = stack.wait_model(model_id)
    assert model["status"] == "ready", model["error"]
    assert xkt_entity_ids(stack.api("GET", f"/v1/models/{model_id}/model.xkt").content)


def test_upload_with_token_and_download(tmp_path):
    from tests.e2e.stack import Stack

    running = Stack(tmp_path, token="tok", workers=1).start()
    try:
        anonymous = running.session.__class__()
        assert anonymous.get(f"{running.url}/api/v1/models").json()["code"] == 40100
        path = sample("IfcOpenHouse_IFC4.ifc")
        with open(path, "rb") as handle:
            model_id = running.api("POST", "/api/v1/models", files={"file": (path.name, handle)}).json()["data"]["id"]
        assert running.wait_model(model_id)["status"] == "ready"
        assert anonymous.get(f"{running.url}/v1/models/{model_id}/model.xkt").status_code == 200
        download = running.api("GET", f"/api/v1/models/{model_id}/download")
        assert download.content == path.read_bytes()
        assert 'filename="IfcOpenHouse_IFC4.ifc"' in download.headers["Content-Disposition"]
        assert running.api("DELETE", f"/api/v1/models/{model_id}").json()["code"] == 0
        assert anonymous.get(f"{running.url}/v1/models/{model_id}/model.xkt").json()["code"] == 40400
    finally:
        running.stop()


def test_the_surviving_worker_takes_over_a_dead_workers_conversion(stack):
    path = sample("duplex.ifc")
    with open(path, "rb") as handle:
        model_id = stack.api("POST", "/api/v1/models", files={"file": (path.name, handle)}).json()["data"]["id"]
    deadline = time.monotonic() + 60
    running_worker = None
    while running_worker is None and time.monotonic() < deadline:
        for name, process in stack.processes.items():
            if name.startswith("worker") and _converting(psutil.Process(process.pid)):
                running_worker = name
        time.sleep(0.05)
    assert running_worker, "no worker started the conversion"
    stack.kill(running_worker)  # SIGKILL; the other worker stays up and is not restarted
    model = stack.wait_model(model_id, timeout=120)
    assert model["status"] == "ready", model["error"]
