import shutil
from pathlib import Path

import pytest

from edit_service.engine.sandbox import Sandbox, SandboxLimits
from edit_service.engine.workflow import Editor

EXAMPLES = Path(__file__).resolve().parents[2] / "edit_service" / "examples"
MODEL_ID = "m_00000000000000aa"
OTHER_MODEL_ID = "m_00000000000000bb"


def example(name: str) -> str:
    return (EXAMPLES / f"{name}.py").read_text()


@pytest.fixture
def data_dir(tmp_path) -> Path:
    (tmp_path / "models" / MODEL_ID).mkdir(parents=True)
    return tmp_path


@pytest.fixture
def sandbox() -> Sandbox:
    return Sandbox(SandboxLimits(wall_seconds=30))


@pytest.fixture
def editor(data_dir, sandbox) -> Editor:
    return Editor(data_dir, sandbox, MODEL_ID)


@pytest.fixture
def uploaded_model(data_dir):
    """The model folder holds an uploaded IFC (no script yet)."""
    source = Path(__file__).resolve().parents[3] / "shared" / "ifc-samples" / "IfcOpenHouse_IFC4.ifc"
    if not source.exists():
        pytest.skip("IfcOpenHouse_IFC4.ifc sample missing")
    shutil.copyfile(source, data_dir / "models" / MODEL_ID / "model.ifc")
    return data_dir / "models" / MODEL_ID


@pytest.fixture
def model(service):
    """A fresh model folder on the module's real edit-service process (`service`): its path there, /models/{id}."""
    return service.new_model()
