"""Thin HTTP layer of a run's clashes as review issues (pinning) and as a BCF 3.0 report."""

from django.http import FileResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.fields import AuthorField, ProvenanceField
from api.signatures import signed_by
from api.views import json_object, validated
from coordination_app.bcf_report import clash_run_report_bcf
from coordination_app.grouping import GROUPINGS
from coordination_app.services.pinning import PER_CLASH, PER_GROUP, PIN_CONFIRM_ABOVE, PIN_MODES, clash_run_pin_issues


class PinClashesSerializer(serializers.Serializer):
    per = serializers.ChoiceField(choices=PIN_MODES, required=False, default=PER_CLASH,
                                  help_text="one issue per present clash (default) or per group of them")
    group = serializers.CharField(required=False, allow_null=True, max_length=64,
                                  help_text=f"with per=group: {', '.join(GROUPINGS)} (as the clash list groups)")
    confirm = serializers.BooleanField(required=False, default=False,
                                       help_text=f"needed when the pin would create more than {PIN_CONFIRM_ABOVE} issues")
    author = AuthorField()
    provenance = ProvenanceField()

    def validate(self, data):
        if data["per"] == PER_GROUP and not data.get("group"):
            raise serializers.ValidationError({"group": f"per=group needs group: one of {', '.join(GROUPINGS)}"})
        return data


class ClashRunIssuesView(APIView):
    @extend_schema(
        request=PinClashesSerializer,
        responses={200: OpenApiResponse(description="{created, reopened, resolved, unchanged}: [{issueId, modelId, topicGuid, clashIds}]"),
                   400: OpenApiResponse(description=f"40001: bad per/group, or more than {PIN_CONFIRM_ABOVE} new issues without confirm: true "
                                                    "(data {issues, confirmAbove}, nothing pinned)"),
                   409: OpenApiResponse(description="40900: the run is not done, or ran on a staged product")},
        summary="Pin the run's present clashes as review issues (per clash or per group), never twice",
    )
    def post(self, request, project_id, name, run_id):
        options = validated(PinClashesSerializer, json_object(request))
        return Response(clash_run_pin_issues(
            project_id=project_id, name=name, run_id=run_id, per=options["per"], group=options.get("group"),
            provenance=options["provenance"], signature=signed_by(request, options["author"]), confirm=options["confirm"],
        ))


class ClashRunReportView(APIView):
    @extend_schema(
        responses={(200, "application/octet-stream"): OpenApiResponse(description="BCF 3.0 archive (attachment, no envelope)"),
                   409: OpenApiResponse(description="40900: the run is not done")},
        summary="The run's present clashes as a BCF 3.0 archive (.bcfzip), one topic per clash",
    )
    def get(self, request, project_id, name, run_id):
        file_name, archive = clash_run_report_bcf(project_id=project_id, name=name, run_id=run_id)
        return FileResponse(archive, content_type="application/octet-stream", as_attachment=True, filename=file_name)
