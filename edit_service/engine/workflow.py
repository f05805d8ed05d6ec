"""Use cases of the edit service for one model: staging, sandbox runs, versions, rollback, diffs, locate and
edit-call.

Every write holds the model's lock (bounded wait). Each use case has one commit point: the working product
(model.ifc + current.map.json + current.snapshot.json, see products.py) and the staging change only after a
successful sandbox run and validation, so script and product never diverge, and a failed or cancelled run
changes nothing.

The Editor is a facade over its parts in edit_service/engine/editor/: staging steps (staging_steps.py), runs,
saves and rollback (runs.py), locate and edit-call (edit_call.py), listings and diffs (diffs.py).
"""

from __future__ import annotations

from pathlib import Path

from edit_service.engine.editor.diffs import DiffsAndVersions
from edit_service.engine.editor.edit_call import EditCall
from edit_service.engine.editor.runs import RunsAndSaves
from edit_service.engine.editor.staging_steps import StagingSteps
from edit_service.engine.sandbox import Sandbox
from edit_service.engine.store import ModelFiles
from edit_service.engine.versions import Versions


class Editor(StagingSteps, RunsAndSaves, EditCall, DiffsAndVersions):
    def __init__(self, data_dir: Path, sandbox: Sandbox, model_id: str, lock_timeout: float = 30):
        self.data_dir = Path(data_dir)
        self.files = ModelFiles(data_dir, model_id, lock_timeout=lock_timeout)
        # runs share the sandbox's slots fairly by requester: the model's, unless the caller named one
        self.sandbox = sandbox if sandbox.requester else sandbox.for_requester(model_id)
        self.versions = Versions(self.files)
