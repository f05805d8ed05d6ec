"""The streamed large-file path (metadata and element values written object by object, geometry records instead of
a GLB, XKT built from them with xeokit-convert's own API) produces what the conversion produced before it, on every
sample and on a generated tower: byte-identical metadata.json and element-values.json, the same XKT entity ids and,
per entity, the same meshes (material, index and vertex counts), but for the elements with openings, whose meshes come
from the opening subtraction since (test_conversion_openings.py compares them with OpenCascade's). Not timed.

pytestmark = pytest.mark.heavy

A "fallback:" entry converts the sample with its header naming IFC4X2, a schema ifcopenshell cannot read, so the
worker's fallback (xeokit-convert's own web-ifc parser) converts it."""

import json
from pathlib import Path

import pytest

from models_app.conversion.runner import run_pipeline
from tests.gateway.conversion_digest import cut_entities, digest
from tests.helpers import sample_files, xkt_entity_ids
from viewer_gateway.config import SHIPPED_CONVERTER

GOLDEN = json.loads((Path(__file__).parent / "conversion_golden.json").read_text())
TOWER = Path(__file__).resolve().parents[2] / "edit_service" / "examples" / "tower.py"


FALLBACK = "fallback:"
UNREADABLE_SCHEMA = "IFC4X2"


def with_schema(path: Path, schema: str, folder: Path) -> Path:
    """A copy of the IFC whose header names schema."""
    text = path.read_bytes()
    head, rest = text.split(b"ENDSEC;", 1)
    declared = head.split(b"FILE_SCHEMA", 1)[1].split(b"'")[1]
    copy = folder / path.name
    copy.write_bytes(head.replace(b"'" + declared + b"'", b"'" + schema.encode() + b"'") + b"ENDSEC;" + rest)
    return copy


def convert(ifc: Path, out: Path, golden: dict) -> dict:
    out.mkdir()
    result = run_pipeline(ifc, out, node_bin="node", converter_script=SHIPPED_CONVERTER, timeout_seconds=600, on_progress=lambda *_: None)
    assert result.ok, result.error
    read_by_ifcopenshell = golden["elementValuesSHA256"] is not None
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["model.xkt", "metadata.json"] + (["element-values.json", "element-bounds.json", "clash-geometry.bin", "georeference.json"] if read_by_ifcopenshell else []))
    if read_by_ifcopenshell:  # bounds of exactly the elements the XKT shows, each a box
        bounds = json.loads((out / "element-bounds.json").read_text())
        assert set(bounds) == set(xkt_entity_ids((out / "model.xkt").read_bytes()))
        assert all(len(b) == 6 and all(low <= high for low, high in zip(b[:3], b[3:])) for b in bounds.values())
    return digest(out, cut_entities(ifc))


@pytest.mark.parametrize("name", [name for name in GOLDEN if not name.startswith(("_", "tower"))])
def test_every_sample_converts_to_what_it_converted_to_before(name, tmp_path):
    stem = name.removeprefix(FALLBACK)
    path = next((p for p in sample_files() if p.stem == stem), None)
    if path is None:
        pytest.skip(f"sample {stem} not available")
    if name.startswith(FALLBACK):
        path = with_schema(path, UNREADABLE_SCHEMA, tmp_path)
    assert convert(path, tmp_path / "out", GOLDEN[name]) == GOLDEN[name]


def test_a_generated_tower_converts_to_what_it_converted_to_before(tmp_path):
    from edit_service.engine.sandbox import Sandbox, SandboxLimits
    from edit_service.engine.scripts import read_params

    script = TOWER.read_text()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ifc, _, _ = Sandbox(SandboxLimits(wall_seconds=120)).build(script, {**read_params(script), "storeys": 6, "bays_x": 3, "bays_y": 3}, run_dir)
    tower = tmp_path / "tower-6x3.ifc"
    ifc.rename(tower)
    assert convert(tower, tmp_path / "out", GOLDEN["tower-6x3"]) == GOLDEN["tower-6x3"]
