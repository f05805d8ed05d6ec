"""A done clash run as a BCF 3.0 archive: one topic per clash the run found present, written by issues_app.bcf's
writer (the same XML as the issues' export).

Each topic is the one pinning makes for that clash (coordination_app.services.pinning): the same topic GUID (so an
archive imported into the model's issues recognises a clash already pinned), title, description of the clash's facts,
labels "Clash" and the test's name (and the clash's review status), its assignee, and one viewpoint aimed at the
clash in the IFC world frame of the clash's a element's model. The markup header names the run's models as external
files."""

from __future__ import annotations

import tempfile

from django.conf import settings

from coordination_app.models import ClashRun
from coordination_app.selectors import clash_run_get
from coordination_app.services.pinning import (
    LABEL,
    SYSTEM_SIGNATURE,
    TOPIC_TYPE,
    ClashFacts,
    clash_bounds,
    clash_description,
    clash_title,
    clash_topic_guid,
    clash_viewpoint,
    done_run,
    present_facts,
    viewpoint_guid,
)
from issues_app import bcf
from models_app.federation import project_placements
from models_app.models import IfcModel
from models_app.selectors import project_get, project_model_ids


def _header_files(run: ClashRun) -> list[dict]:
    """The run's models (their versions) as the external files of each topic's header."""
    # only the project's models are named: one that left it since the run is another project's (or its uploader's) now
    names = dict(IfcModel.objects.filter(pk__in=[m["modelId"] for m in run.model_versions], project_link__project_id=run.test.project_id)
                 .values_list("id", "name"))
    return [
        {"filename": f"{names.get(m['modelId']) or m['modelId']} ({m.get('version') or 'current'})", "reference": m["modelId"], "date": None}
        for m in run.model_versions
    ]


def _topic(run: ClashRun, facts: ClashFacts, placements: dict, bounds: dict, header: list[dict]) -> bcf.TopicRecord:
    test = run.test
    guid = clash_topic_guid(test, facts.clash_id)
    return bcf.TopicRecord(
        guid=guid, title=clash_title(test, [facts]), status="open", creation_author=SYSTEM_SIGNATURE.author,
        created_at=run.finished_at or run.created_at, description=clash_description(test, run, [facts]), topic_type=TOPIC_TYPE,
        labels=[LABEL, test.name, *([facts.review_status] if facts.review_status else [])], assigned_to=facts.assigned_to,
        header_files=header, viewpoints=[clash_viewpoint(facts.a.model_id, [facts], placements, bounds, guid=viewpoint_guid(guid))],
    )


def clash_run_report_bcf(*, project_id: str, name: str, run_id: str):
    """The run's present clashes as a BCF 3.0 archive: (file name, an open temporary file holding it, at position
    0; it is deleted when closed). Conflict while the run is not done."""
    run = done_run(clash_run_get(project_id, name, run_id))
    clashes = present_facts(run)
    placements = project_placements(run.test.project_id) if clashes else {}
    own = set(project_model_ids(run.test.project_id))  # a model that left the project: its current files are not read
    bounds = clash_bounds([facts for facts in clashes if {facts.a.model_id, facts.b.model_id} <= own])
    header = _header_files(run)
    handle = tempfile.TemporaryFile(dir=settings.FILE_UPLOAD_TEMP_DIR)
    try:
        bcf.write_bcf_archive(
            handle, project_id=run.test.project_id, project_name=f"{project_get(run.test.project_id).title} - clash test {run.test.name}, run {run.pk}",
            topics=[_topic(run, facts, placements, bounds, header) for facts in clashes], documents={}, image_file=lambda url: None,
        )
        handle.seek(0)
    except BaseException:
        handle.close()
        raise
    return f"{run.test.name}-{run.pk}.bcfzip", handle
