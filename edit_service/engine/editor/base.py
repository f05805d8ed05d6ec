"""What every part of the Editor works on."""

from __future__ import annotations

from pathlib import Path

from edit_service.engine.sandbox import Sandbox
from edit_service.engine.store import ModelFiles
from edit_service.engine.versions import Versions


class EditorBase:
    """The model's files, its versions and the sandbox its runs use (set by Editor.__init__)."""

    data_dir: Path
    files: ModelFiles
    sandbox: Sandbox
    versions: Versions
