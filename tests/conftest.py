import dataclasses

import pytest
from rest_framework.test import APIClient


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def viewer_config(settings):
    """Replace parts of the gateway configuration for one test: viewer_config(apiToken="t")."""

    def apply(**changes):
        settings.VIEWER = dataclasses.replace(settings.VIEWER, **changes)
        return settings.VIEWER

    return apply


@pytest.fixture(autouse=True)
def empty_data_dir(settings):
    """Each test starts with no model folders and no upload leftovers."""
    import shutil
    from pathlib import Path

    yield
    for folder in (Path(settings.MODELS_DIR), Path(settings.UPLOAD_TMP_DIR)):
        for child in folder.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
