import json
import socket
import time
from pathlib import Path

import psutil
import pytest
from django_tasks_db.models import DBTaskResult

from core.identity import process_identity
from core.jobs import lifecycle
from models_app import services
from models_app.conversion import runner
from models_app.models import IfcModel
from models_app.storage import model_dir
from tests.helpers import MINIMAL_IFC, sample, xkt_entity_ids

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]


def uploaded(name: str, content: bytes) -> IfcModel:
    return services.model_upload(uploaded_file=_temp_upload(name, content))


def _temp_upload(name, content):
    from django.core.files.uploadedfile import TemporaryUploadedFile

    upload = TemporaryUploadedFile(name, "application/octet-stream", len(content), None)
    upload.write(content)
    upload.flush()
    return upload


def waiting_tasks(model_id: str) -> int:
    return sum(model_id in r.args_kwargs["args"] for r in DBTaskResult.objects.ready())


def test_conversion_publishes_xkt_and_metadata_with_matching_ids():
    model = uploaded("house.ifc", sample("IfcOpenHouse_IFC4.ifc").read_bytes())
    services.run_conversion(model.id)
    model.refresh_from_db()
    assert (model.status, model.error, model.job) == ("ready", "", "idle")
    folder = model_dir(model.id)
    metadata = json.loads((folder / "metadata.json").read_text())
    meta_ids = {o["id"] for o in metadata["metaObjects"]}
    entity_ids = xkt_entity_ids((folder / "model.xkt").read_bytes())
    assert entity_ids and set(entity_ids) <= meta_ids
    project = next(o for o in metadata["metaObjects"] if o["type"] == "IfcProject")
    assert metadata["projectId"] == project["id"]
    assert not [p for p in folder.iterdir() if p.name.startswith(".convert-")]


def test_the_work_folder_is_gone_when_the_model_is_ready():
    """A client that sees the model ready never sees the conversion's work folder in it."""
    from models_app.signals import model_ready

    seen_at_ready = []

    def look(sender, model_id, **kwargs):
        seen_at_ready.extend(p.name for p in model_dir(model_id).iterdir() if p.name.startswith(".convert-"))

    model = uploaded("house.ifc", MINIMAL_IFC)
    model_ready.connect(look, weak=False)
    try:
        services.run_conversion(model.id)
    finally:
        model_ready.disconnect(look)
    model.refresh_from_db()
    assert model.status == "ready" and seen_at_ready == []


def test_metadata_is_complete_on_duplex():
    import ifcopenshell

    from models_app.conversion.metadata import build_metadata

    ifc = ifcopenshell.open(str(sample("duplex.ifc")))
    metadata = build_metadata(ifc)
    assert len(metadata["metaObjects"]) == len(ifc.by_type("IfcProduct")) + 1
    psets = {p["id"]: p for p in metadata["propertySets"]}
    referenced = {i for o in metadata["metaObjects"] for i in o.get("propertySetIds", ())}
    assert referenced == set(psets)
    assert all(p["type"] == "Pset" for p in psets.values())
    value_types = {row["type"] for p in psets.values() for row in p["properties"]}
    assert {"IfcLabel", "IfcBoolean", "IfcLengthMeasure"} <= value_types
    assert not any(t.isdigit() for t in value_types)
    # type-object property sets are attached to their occurrences
    door = ifc.by_type("IfcDoor")[0]
    door_type_psets = {p.GlobalId for rel in door.IsDefinedBy if rel.is_a("IfcRelDefinesByType") for p in rel.RelatingType.HasPropertySets or ()}
    door_meta = next(o for o in metadata["metaObjects"] if o["id"] == door.GlobalId)
    assert door_type_psets and door_type_psets <= set(door_meta["propertySetIds"])


def test_metadata_has_quantity_sets_on_ac20():
    import ifcopenshell

    from models_app.conversion.metadata import build_metadata

    ifc = ifcopenshell.open(str(sample("AC20-FZK-Haus.ifc")))
    metadata = build_metadata(ifc)
    quantity_sets = [p for p in metadata["propertySets"] if p["id"] in {q.GlobalId for q in ifc.by_type("IfcElementQuantity")}]
    assert quantity_sets
    types = {row["type"] for p in quantity_sets for row in p["properties"]}
    assert types & {"IfcLengthMeasure", "IfcAreaMeasure", "IfcVolumeMeasure"}
    wall = ifc.by_type("IfcWall")[0] if ifc.by_type("IfcWall") else ifc.by_type("IfcWallStandardCase")[0]
    storey = next(o for o in metadata["metaObjects"] if o["id"] == wall.GlobalId)["parent"]
    assert next(o for o in metadata["metaObjects"] if o["id"] == storey)["type"] == "IfcBuildingStorey"


def test_a_broken_ifc_fails_with_a_readable_error():
    broken = MINIMAL_IFC.replace(b"#1=IFCPROJECT(", b"#1=IFCWALL(#99,")
    model = uploaded("broken.ifc", broken)
    services.run_conversion(model.id)
    model.refresh_from_db()
    assert model.status == "failed" and model.job == "idle"
    assert model.error and len(model.error) <= 2048
    assert not (model_dir(model.id) / "model.xkt").exists()


def _conversion_processes() -> list[str]:
    """Command lines of this process's conversion children: forked ifcopenshell stages (a zygote's children) and
    converters; the warm zygote itself is not one."""
    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            line, parent = " ".join(process.cmdline()), " ".join(process.parent().cmdline())
        except psutil.Error:
            continue
        if ("conversion.zygote" in line and "conversion.zygote" in parent and "bwrap" not in parent) or "convert.mjs" in line:
            found.append(line)
    return found


def test_time_limit_kills_the_whole_pipeline(viewer_config):
    viewer_config(conversionTimeoutSeconds=0.5)
    model = uploaded("duplex.ifc", sample("duplex.ifc").read_bytes())
    services.run_conversion(model.id)
    model.refresh_from_db()
    assert model.status == "failed"
    assert "time limit of 0.5 s" in model.error
    time.sleep(0.2)
    assert _conversion_processes() == []


def test_a_conversion_over_the_memory_cap_fails_with_a_clear_error(viewer_config):
    viewer_config(conversionMemoryMB=16)
    model = uploaded("duplex.ifc", sample("duplex.ifc").read_bytes())
    services.run_conversion(model.id)
    model.refresh_from_db()
    assert (model.status, model.job) == ("failed", "idle")
    assert "exceeded the conversion memory cap of 16 MB" in model.error and "conversionMemoryMB" in model.error
    assert not (model_dir(model.id) / "model.xkt").exists()
    assert _conversion_processes() == []


def test_without_a_cgroup_conversions_fail_closed_unless_allowed(viewer_config, tmp_path):
    viewer_config(conversionCgroupRoot=tmp_path)
    model = uploaded("house.ifc", sample("IfcOpenHouse_IFC4.ifc").read_bytes())
    services.run_conversion(model.id)
    model.refresh_from_db()
    assert model.status == "failed" and "isolation unavailable" in model.error and "conversionAllowNoCgroup" in model.error
    viewer_config(conversionCgroupRoot=tmp_path, conversionAllowNoCgroup=True)
    services.run_conversion(services.model_retry(model.id).id)
    model.refresh_from_db()
    assert model.status == "ready", model.error


def test_requests_while_queued_are_merged():
    model = uploaded("tiny.ifc", MINIMAL_IFC)
    for _ in range(3):
        services.request_conversion(model.id)
    model.refresh_from_db()
    assert waiting_tasks(model.id) == 1
    assert model.revision == 4 and model.job == "queued"


def test_request_during_a_run_makes_it_run_again(monkeypatch):
    model = uploaded("house.ifc", sample("IfcOpenHouse_IFC4.ifc").read_bytes())
    runs = []
    real_run = runner.run_pipeline

    def run_and_change_meanwhile(*args, **kwargs):
        runs.append(IfcModel.objects.get(pk=model.id).revision)
        if len(runs) == 1:
            services.request_conversion(model.id)  # e.g. a script run replaced model.ifc
        return real_run(*args, **kwargs)

    monkeypatch.setattr(services, "run_pipeline", run_and_change_meanwhile)
    services.run_conversion(model.id)
    model.refresh_from_db()
    assert runs == [1, 2]
    assert model.status == "ready" and model.job == "idle"
    assert waiting_tasks(model.id) == 1  # the original task; no second task was needed


def test_deleted_during_conversion_leaves_nothing(monkeypatch):
    model = uploaded("house.ifc", sample("IfcOpenHouse_IFC4.ifc").read_bytes())
    real_run = runner.run_pipeline

    def delete_meanwhile(*args, **kwargs):
        result = real_run(*args, **kwargs)
        services.model_delete(model.id)
        return result

    monkeypatch.setattr(services, "run_pipeline", delete_meanwhile)
    services.run_conversion(model.id)
    assert not IfcModel.objects.filter(pk=model.id).exists()
    assert not model_dir(model.id).exists()


def test_progress_is_recorded_while_converting(monkeypatch):
    model = uploaded("house.ifc", sample("IfcOpenHouse_IFC4.ifc").read_bytes())
    seen = []
    real_run = runner.run_pipeline

    def watch(*args, on_progress, **kwargs):
        def record(phase, percent):
            on_progress(phase, percent)
            current = IfcModel.objects.get(pk=model.id)
            seen.append((current.progress_phase, current.progress_percent))

        return real_run(*args, on_progress=record, **kwargs)

    monkeypatch.setattr(services, "run_pipeline", watch)
    monkeypatch.setattr(lifecycle, "PROGRESS_WRITE_INTERVAL", 0)
    services.run_conversion(model.id)
    phases = [phase for phase, _ in seen]
    assert phases[0] == "reading" and "geometry" in phases and phases[-1] == "done"
    percents = [percent for _, percent in seen]
    assert percents == sorted(percents) and percents[-1] == 100


def test_recovery_requeues_conversions_of_dead_workers():
    model = uploaded("tiny.ifc", MINIMAL_IFC)
    dead = psutil.Popen(["true"])
    dead.wait()
    identity = f"{socket.gethostname()}:{dead.pid}:{int(time.time()) - 5}"
    DBTaskResult.objects.all().delete()
    IfcModel.objects.filter(pk=model.id).update(job="running", job_worker=identity)
    alive = uploaded("tiny2.ifc", MINIMAL_IFC)
    DBTaskResult.objects.filter(args_kwargs__args=["conversion", alive.id]).delete()
    IfcModel.objects.filter(pk=alive.id).update(job="running", job_worker=process_identity())

    assert services.recover_interrupted_conversions() == [model.id]
    model.refresh_from_db()
    assert model.job == "queued" and waiting_tasks(model.id) == 1
    assert services.recover_interrupted_conversions() == []


def test_recovery_requeues_queued_models_whose_task_is_gone():
    model = uploaded("tiny.ifc", MINIMAL_IFC)
    DBTaskResult.objects.all().delete()
    assert services.recover_interrupted_conversions() == [model.id]
    assert waiting_tasks(model.id) == 1


def test_element_values_read_the_ifc_as_ifcopenshell_does():
    import ifcopenshell
    import ifcopenshell.util.element

    from models_app.conversion.element_values import element_values
    from tests.helpers import sample

    duplex = ifcopenshell.open(str(sample("duplex.ifc")))
    values = element_values(duplex)
    door = next(e for e in duplex.by_type("IfcDoor") if "FireRating" in values[e.GlobalId])
    expected = next(p["FireRating"] for name, p in sorted(ifcopenshell.util.element.get_psets(door).items(), key=lambda i: (not i[0].endswith("Common"), i[0])) if p.get("FireRating"))
    assert values[door.GlobalId]["FireRating"] == str(expected)
    haus = ifcopenshell.open(str(sample("AC20-FZK-Haus.ifc")))
    described = {e.GlobalId: e.Description for e in haus.by_type("IfcProduct") if e.Description}
    assert described and {g: element_values(haus)[g]["Description"] for g in described} == described
    classified = [g for g, v in element_values(haus).items() if "Classification" in v]
    assert classified


def test_element_bounds_are_each_shapes_world_box_in_ifc_coordinates():
    import io

    import ifcopenshell
    import ifcopenshell.geom
    import numpy as np

    from models_app.conversion.geometry import write_geometry
    from tests.helpers import sample

    haus = ifcopenshell.open(str(sample("AC20-FZK-Haus.ifc")))
    bounds_file = io.StringIO()
    written = write_geometry(haus, io.BytesIO(), 2, bounds_handle=bounds_file)
    bounds = json.loads(bounds_file.getvalue())
    assert len(bounds) == written
    settings = ifcopenshell.geom.settings()
    settings.set("use-world-coords", True)
    for element in [*haus.by_type("IfcWall")[:3], *haus.by_type("IfcWindow")[:2], *haus.by_type("IfcSlab")[:2]]:
        verts = np.array(ifcopenshell.geom.create_shape(settings, element).geometry.verts).reshape(-1, 3)
        assert np.allclose(bounds[element.GlobalId], [*verts.min(axis=0), *verts.max(axis=0)], atol=0.0011), element


LOOPING_IFC = """ISO-10303-21;
HEADER;FILE_DESCRIPTION((''),'2;1');FILE_NAME('loop.ifc','2026-01-01T00:00:00',(''),(''),'','','');FILE_SCHEMA(('IFC4'));ENDSEC;
DATA;
#1=IFCPROJECT('0YvctVUKr0kugbFTf53O9L',$,'Loop',$,$,$,$,$,$);
#2=IFCWALL('1YvctVUKr0kugbFTf53O9L',$,'Wall',$,$,$,$,$,$);
#3=IFCRELAGGREGATES('2YvctVUKr0kugbFTf53O9L',$,$,$,#2,(#2));
#4=IFCSLAB('3YvctVUKr0kugbFTf53O9L',$,'A',$,$,$,$,$,$);
#5=IFCSLAB('4YvctVUKr0kugbFTf53O9L',$,'B',$,$,$,$,$,$);
#6=IFCRELAGGREGATES('5YvctVUKr0kugbFTf53O9L',$,$,$,#4,(#5));
#7=IFCRELAGGREGATES('6YvctVUKr0kugbFTf53O9L',$,$,$,#5,(#4));
ENDSEC;
END-ISO-10303-21;
"""


def test_self_and_cyclic_parents_are_repaired_in_the_streamed_metadata(tmp_path):
    """An element that aggregates itself and a ring of two: every chain of parents ends at the project, in the
    metadata the pipeline streams and in the one built whole."""
    import io

    import ifcopenshell

    from models_app.conversion.metadata import MetaModel

    path = tmp_path / "loop.ifc"
    path.write_text(LOOPING_IFC)
    ifc = ifcopenshell.open(str(path))
    streamed = io.StringIO()
    MetaModel(ifc).write(streamed)
    for meta in (json.loads(streamed.getvalue()), MetaModel(ifc).build()):
        parents = {o["id"]: o.get("parent") for o in meta["metaObjects"]}
        for start in parents:
            seen, current = set(), start
            while current is not None:
                assert current not in seen, f"a loop through {current}"
                seen.add(current)
                current = parents.get(current)
            assert meta["projectId"] in seen


def test_only_a_release_candidate_named_in_the_header_is_read_as_the_final_release(tmp_path):
    import os

    from models_app.conversion.pipeline import _as_final_release

    def final_release_of(text: bytes):
        path = tmp_path / "model.ifc"
        path.write_bytes(text)
        fd = os.open(path, os.O_RDONLY)
        try:
            result = _as_final_release(fd)
        finally:
            os.close(fd)
        if result is None:
            return None
        copy, candidate = result
        try:
            return Path(f"/proc/self/fd/{copy}").read_bytes(), candidate  # as ifcopenshell opens it
        finally:
            os.close(copy)

    candidate = MINIMAL_IFC.replace(b"FILE_SCHEMA(('IFC4'))", b"FILE_SCHEMA(('IFC4X3_RC4'))")
    assert final_release_of(candidate) == (MINIMAL_IFC.replace(b"FILE_SCHEMA(('IFC4'))", b"FILE_SCHEMA(('IFC4X3_ADD2'))"), "IFC4X3_RC4")
    assert final_release_of(MINIMAL_IFC) is None
    in_data_only = MINIMAL_IFC.replace(b"ENDSEC;\nDATA;\n", b"ENDSEC;\nDATA;\n/* FILE_SCHEMA(('IFC4X3_RC2')); */\n", 1)
    assert in_data_only != MINIMAL_IFC and final_release_of(in_data_only) is None
    assert final_release_of(candidate.replace(b"ENDSEC;", b"")) is None  # no end of a header: not a STEP file to rewrite
