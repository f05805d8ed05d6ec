"""Thin HTTP layer of clash tests, runs and clashes. Access (VIEW, EDIT, REVIEW on the project) is decided by the
access middleware from the route name and the URL's project_id (viewer_gateway/access_rules.py)."""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from api.principal import Principal
from api.views import json_object, validated
from coordination_app import selectors, services
from coordination_app.grouping import grouping_checked
from coordination_app.models import ClashRun
from coordination_app.serializers import (
    ClashPatchSerializer,
    ClashRunSerializer,
    ClashRunStartSerializer,
    ClashTestPutSerializer,
    ClashTestSerializer,
    clash_row,
    clash_rows,
)

RUN_STARTED = OpenApiResponse(description="{runId, status, progress: {phase, percent}}")


def run_started(run: ClashRun) -> dict:
    return {"runId": run.id, "status": run.status, "progress": {"phase": run.progress_phase, "percent": run.progress_percent}}


class ClashTestListView(APIView):
    @extend_schema(responses=ClashTestSerializer(many=True), summary="The project's clash tests, by name, each with its last run")
    def get(self, request, project_id):
        return Response(ClashTestSerializer(selectors.clash_test_list(project_id), many=True).data)


class ClashTestView(APIView):
    @extend_schema(responses=ClashTestSerializer, summary="One clash test")
    def get(self, request, project_id, name):
        return Response(ClashTestSerializer(selectors.clash_test_get(project_id, name)).data)

    @extend_schema(request=ClashTestPutSerializer, responses=ClashTestSerializer,
                   summary="Define or change a clash test: set A, set B (absent: A against itself), type, tolerance, distance, automatic")
    def put(self, request, project_id, name):
        body = validated(ClashTestPutSerializer, json_object(request))
        test, created = services.clash_test_put(
            project_id=project_id, name=name, a=body["a"], b=body["b"], kind=body["type"], tolerance=body["tolerance"],
            distance=body["distance"], automatic=body["automatic"], by=Principal.of(request).name,
        )
        return Response({**ClashTestSerializer(test).data, "created": created})

    @extend_schema(responses={200: OpenApiResponse(description="data: null")}, summary="Delete a clash test with its runs and clashes")
    def delete(self, request, project_id, name):
        services.clash_test_delete(project_id=project_id, name=name)
        return Response(None)


class ClashRunListView(APIView):
    @extend_schema(responses=ClashRunSerializer(many=True), summary="The test's runs, newest first")
    def get(self, request, project_id, name):
        return Response(ClashRunSerializer(selectors.clash_run_list(project_id, name), many=True).data)

    @extend_schema(request=ClashRunStartSerializer, responses={200: RUN_STARTED},
                   summary="Run the test over its models' current versions (queued; 40900 while a model is not ready)")
    def post(self, request, project_id, name):
        body = validated(ClashRunStartSerializer, json_object(request))
        test = selectors.clash_test_get(project_id, name)
        run = services.run_request(test, trigger=ClashRun.Trigger.USER, by=Principal.of(request).name, staged=body["staged"])
        return Response(run_started(run))


class ClashRunView(APIView):
    @extend_schema(responses=ClashRunSerializer, summary="One run: status, progress, the model versions it used, its summary")
    def get(self, request, project_id, name, run_id):
        return Response(ClashRunSerializer(selectors.clash_run_get(project_id, name, run_id)).data)


class ClashRunCancelView(APIView):
    @extend_schema(request=None, responses={200: RUN_STARTED},
                   summary="Cancel a run: a queued one at once, a running one within a second; an ended run is answered as it is")
    def post(self, request, project_id, name, run_id):
        run = services.run_cancel(selectors.clash_run_get(project_id, name, run_id))
        return Response(run_started(run))


class ClashListView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, required=False, enum=list(selectors.STATUS_FILTERS),
                             description="one status of the run; approved: present and approved; open: present and not approved"),
            OpenApiParameter("group", str, required=False, description="by-proximity:<metres> | storey | element | classes (adds groupId)"),
        ],
        responses={200: OpenApiResponse(description="[{clashId, status, reviewStatus, assignedTo, a: {modelId, guid, type, name, storey}, "
                                                    "b: {...}, point: [x, y, z], depth?, distance?, groupId?}]")},
        summary="The clashes a run saw: present ones (new, active) and the ones it resolved or found missing",
    )
    def get(self, request, project_id, name, run_id):
        group = request.query_params.get("group") or None
        if group is not None:
            grouping_checked(group)
        run = selectors.clash_run_get(project_id, name, run_id)
        return Response(clash_rows(selectors.run_sightings(run, request.query_params.get("status")), group))


class ClashDetailView(APIView):
    @extend_schema(request=ClashPatchSerializer, responses={200: OpenApiResponse(description="the clash as the run saw it, as in the list")},
                   summary="Set a clash's reviewer status (\"\", reviewed, approved) and/or assignee (a project member, \"\" for nobody)")
    def patch(self, request, project_id, name, run_id, clash_id):
        body = validated(ClashPatchSerializer, json_object(request))
        sighting = selectors.clash_of_run(selectors.clash_run_get(project_id, name, run_id), clash_id)
        services.clash_review(sighting, review_status=body.get("reviewStatus", services.NO_CHANGE),
                              assigned_to=body.get("assignedTo", services.NO_CHANGE))
        return Response(clash_row(sighting))  # its clash refreshed by the use case
