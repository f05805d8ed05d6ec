"""The API shapes of coordination (camelCase, as issue 34's interface has them): clash tests, runs, clashes."""

import math

from rest_framework import serializers

from api.fields import StrictCharField

from coordination_app.grouping import group_ids
from coordination_app.models import ClashRun, ClashTest
from coordination_app.selectors import run_summary


class ClashSetField(serializers.JSONField):
    """{models: [ids], classes?: [IFC classes], exclude?: [IFC classes]}; checked by the use case (40001 naming
    a.models, b.classes ...)."""


class MetresField(serializers.FloatField):
    """A length in metres: a finite number >= 0; a JSON boolean is no number (DRF's FloatField takes true as 1.0)."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            self.fail("invalid")
        return value


class ClashTestPutSerializer(serializers.Serializer):
    a = ClashSetField()
    b = ClashSetField(required=False, allow_null=True, default=None)
    type = serializers.ChoiceField(choices=ClashTest.Kind.values, required=False, default=ClashTest.Kind.HARD)
    tolerance = MetresField(required=False, default=0.01, min_value=0)
    distance = MetresField(required=False, default=0.0, min_value=0)
    automatic = serializers.BooleanField(required=False, default=False)


class ClashTestSerializer(serializers.ModelSerializer):
    projectId = serializers.CharField(source="project_id")
    type = serializers.CharField(source="kind")
    createdBy = serializers.CharField(source="created_by")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")
    lastRun = serializers.SerializerMethodField()

    class Meta:
        model = ClashTest
        fields = ["name", "projectId", "a", "b", "type", "tolerance", "distance", "automatic", "createdBy", "createdAt", "updatedAt", "lastRun"]

    def get_lastRun(self, test) -> dict | None:
        run = test.runs.order_by("-created_at").first()
        return None if run is None else {"runId": run.id, "status": run.status, "summary": run_summary(run)}


class ClashRunSerializer(serializers.ModelSerializer):
    runId = serializers.CharField(source="id")
    test = serializers.CharField(source="test.name")
    progress = serializers.SerializerMethodField()
    models = serializers.SerializerMethodField()
    summary = serializers.SerializerMethodField()
    requestedBy = serializers.CharField(source="requested_by")
    createdAt = serializers.DateTimeField(source="created_at")
    startedAt = serializers.DateTimeField(source="started_at")
    finishedAt = serializers.DateTimeField(source="finished_at")

    class Meta:
        model = ClashRun
        fields = ["runId", "test", "status", "progress", "models", "summary", "error", "trigger", "staged", "requestedBy", "createdAt",
                  "startedAt", "finishedAt"]

    def get_models(self, run) -> list[dict]:
        """[{modelId, version}] the run used (what else a run records of its models stays inside)."""
        return [{"modelId": entry["modelId"], "version": entry["version"]} for entry in run.model_versions]

    def get_progress(self, run) -> dict:
        return {"phase": run.progress_phase, "percent": run.progress_percent}

    def get_summary(self, run) -> dict | None:
        return run_summary(run)


class ClashRunStartSerializer(serializers.Serializer):
    staged = serializers.BooleanField(required=False, default=False,
                                      help_text="run on the working (staged) product of each model: compared like any run, it changes no clash's status")


def clash_row(sighting) -> dict:
    """One clash as a run saw it: {clashId, status, reviewStatus, assignedTo, a, b, point, depth?, distance?}."""
    clash = sighting.clash
    row = {"clashId": clash.id, "status": sighting.status, "reviewStatus": clash.review_status, "assignedTo": clash.assigned_to,
           "a": clash.a, "b": clash.b, "point": sighting.point}
    if sighting.depth is not None:
        row["depth"] = sighting.depth
    if sighting.distance is not None:
        row["distance"] = sighting.distance
    return row


def clash_rows(sightings, group: str | None = None) -> list[dict]:
    """The rows of a run's clashes, each with its groupId under `group` (coordination_app.grouping)."""
    rows = [clash_row(sighting) for sighting in sightings]
    if group:
        for row, group_id in zip(rows, group_ids(rows, group)):
            row["groupId"] = group_id
    return rows


class ClashPatchSerializer(serializers.Serializer):
    reviewStatus = StrictCharField(required=False, allow_blank=True, max_length=16)
    assignedTo = StrictCharField(required=False, allow_blank=True, max_length=150)
