"""What every part of the Editor works on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from edit_service.engine.sandbox import Sandbox
from edit_service.engine.store import ModelFiles, write_atomic
from edit_service.engine.versions import Versions


class EditorBase:
    """The model's files, its versions and the sandbox its runs use (set by Editor.__init__)."""

    data_dir: Path
    files: ModelFiles
    sandbox: Sandbox
    versions: Versions

    @contextmanager
    def staging_restored_on_failure(self) -> Iterator[None]:
        """The staging file as it is now comes back when the block fails (a step pushed for a product that was
        never published must not stay staged)."""
        before = self.files.staging.read_bytes() if self.files.staging.exists() else None
        try:
            yield
        except BaseException:
            if before is None:
                self.files.staging.unlink(missing_ok=True)
            else:
                write_atomic(self.files.staging, before)
            raise
