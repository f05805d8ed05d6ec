"""A conversion whose worker keeps getting killed: real `manage.py conversion_worker` processes on a real gateway,
each killed (SIGKILL, its whole process group) while it converts; the next worker's recovery queues the conversion
again until its attempts are used up, then the model fails saying why. The converter never finishes, so the kill
always lands mid-run."""

from __future__ import annotations

import sqlite3

import pytest

from tests.e2e.stack import Stack
from tests.helpers import MINIMAL_IFC, poll

pytestmark = pytest.mark.e2e

ATTEMPTS = 3


def conversion_job(stack: Stack, model_id: str) -> tuple[str, str, int]:
    """(job, job_worker, attempts) of the model, read from the stack's database."""
    with sqlite3.connect(stack.data_dir / "viewer.sqlite3") as database:
        return database.execute("SELECT job, job_worker, attempts FROM models_app_ifcmodel WHERE id = ?", (model_id,)).fetchone()


def test_a_conversion_whose_worker_keeps_dying_fails_after_its_attempts(tmp_path):
    converter = tmp_path / "converter" / "hang.mjs"
    converter.parent.mkdir()
    converter.write_text("setInterval(() => {}, 1000);\n")
    data = tmp_path / "data"
    data.mkdir()
    stack = Stack(data, workers=1, config={"converterScript": str(converter), "conversionTimeoutSeconds": 3600})
    try:
        stack.migrate()
        stack.start_gateway()
        model_id = stack.api("POST", "/api/v1/models", files={"file": ("tiny.ifc", MINIMAL_IFC)}).json()["data"]["id"]
        for attempt in range(1, ATTEMPTS + 1):
            stack.start_workers()  # its recovery at start gives it the conversion the killed worker left
            pid = stack.processes["worker0"].pid
            job = poll(lambda: conversion_job(stack, model_id), lambda job: job[1].split(":")[1:2] == [str(pid)], timeout=120)  # noqa: B023 - polled in this iteration
            assert (job[0], job[2]) == ("running", attempt)
            stack.kill("worker0")
        stack.start_workers()
        model = stack.wait_model(model_id, timeout=120)
        assert (model["status"], model["error"]) == ("failed", f"the conversion worker died {ATTEMPTS} times while converting this model")
        assert conversion_job(stack, model_id) == ("idle", "", ATTEMPTS)
        assert not [path for path in (data / "models" / model_id).iterdir() if path.name.startswith(".convert-")]
    finally:
        stack.stop()
