"""The two kinds of script-built model: IFC (script_lib, model.ifc, converted to XKT by the gateway) and DXF drawings
(dxf_lib, model.dxf, previewed in 2D through render.json). Everything else (staging, versions, locks, sandbox, script
map, diffs) is shared; this names what differs. A model's kind is the `model.kind` file in its folder, written when
the model is created; without it a model is IFC."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

KIND_FILE = "model.kind"
PROJECT_FILE = "model.project"  # the project id, written by the gateway; a script reads drawings of its project only
RENDER_FILE = "render.json"


@dataclass(frozen=True)
class ModelKind:
    name: str
    suffix: str  # of the product and of its per-version copies
    inspector: str  # sandbox entry point: validation, snapshot (and render.json)
    inspector_outputs: tuple[str, ...]
    what: str  # for messages

    @property
    def product_name(self) -> str:
        return f"model{self.suffix}"

    @property
    def build_output(self) -> str:
        return f"out{self.suffix}"

    @property
    def extra_outputs(self) -> tuple[str, ...]:
        """Inspector outputs published beside the product (besides the snapshot)."""
        return tuple(name for name in self.inspector_outputs if name != "snapshot.json")


IFC = ModelKind("ifc", ".ifc", "inspect_ifc.py", ("snapshot.json",), "IFC")
DXF = ModelKind("dxf", ".dxf", "inspect_dxf.py", ("snapshot.json", RENDER_FILE), "DXF")
KINDS = {kind.name: kind for kind in (IFC, DXF)}


def kind_of(model_root: Path) -> ModelKind:
    try:
        name = (model_root / KIND_FILE).read_text(encoding="ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return IFC
    return KINDS.get(name, IFC)


def project_of(model_root: Path) -> str | None:
    try:
        return (model_root / PROJECT_FILE).read_text(encoding="ascii").strip() or None
    except (FileNotFoundError, UnicodeDecodeError):
        return None
