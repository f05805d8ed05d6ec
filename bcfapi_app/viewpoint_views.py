"""BCF API 3.0 viewpoints (3.5): immutable (POST, GET, DELETE, no PUT) with their sub-resources: the snapshot and
bitmaps as image files, the selected, coloured and visible components as JSON."""

from __future__ import annotations

from api.principal import Principal
from api.static_files import serve_file
from bcfapi_app import topic_services, topics
from bcfapi_app.authorization import ProjectActions
from bcfapi_app.responses import BcfView, bare
from core.errors import NotFound
from issues_app.issue_files import model_image_path

IMAGE_TYPES = {"png": "image/png", "jpg": "image/jpeg"}


def viewpoint_answer(request, project_id: str, issue, viewpoint: dict, actions: ProjectActions | None = None) -> dict:
    """viewpoint_GET, with `authorization` when the request asks for it (`actions`: the caller's, once for a list)."""
    answer = topics.viewpoint_json(viewpoint)
    if topics.wants_authorization(request):
        actions = actions or ProjectActions.of(Principal.of(request), project_id)
        answer["authorization"] = {"viewpoint_actions": topics.viewpoint_actions(actions, issue, viewpoint["guid"])}
    return answer


def _image(request, issue, url: str | None, image_type: str, what: str):
    path = model_image_path(issue.model_id, url) if url else None
    if path is None:
        raise NotFound(f"{what} not found")
    return serve_file(request, path, IMAGE_TYPES.get(image_type, "application/octet-stream"))


class ViewpointListView(BcfView):
    def get(self, request, project_id, topic_guid):
        issue = topics.topic_get(project_id, topic_guid)
        actions = ProjectActions.of(Principal.of(request), project_id) if topics.wants_authorization(request) else None
        return bare([viewpoint_answer(request, project_id, issue, viewpoint, actions) for viewpoint in issue.viewpoints or ()])

    def post(self, request, project_id, topic_guid):
        """POST viewpoints: 201 with the stored viewpoint (images given as base64 in snapshot_data / bitmap_data)."""
        issue = topics.topic_get(project_id, topic_guid)
        viewpoint = topic_services.viewpoint_create(issue=issue, body=request.data, principal=Principal.of(request))
        return bare(viewpoint_answer(request, project_id, issue, viewpoint), status=201)


class ViewpointDetailView(BcfView):
    def get(self, request, project_id, topic_guid, viewpoint_guid):
        issue = topics.topic_get(project_id, topic_guid)
        return bare(viewpoint_answer(request, project_id, issue, topics.viewpoint_get(issue, viewpoint_guid)))

    def delete(self, request, project_id, topic_guid, viewpoint_guid):
        """DELETE viewpoint: 409 while a comment refers to it."""
        issue = topics.topic_get(project_id, topic_guid)
        topic_services.viewpoint_remove(issue=issue, viewpoint_guid=viewpoint_guid, principal=Principal.of(request))
        return bare(None)


class ViewpointSnapshotView(BcfView):
    def get(self, request, project_id, topic_guid, viewpoint_guid):
        issue = topics.topic_get(project_id, topic_guid)
        snapshot = topics.viewpoint_get(issue, viewpoint_guid).get("snapshot") or {}
        return _image(request, issue, snapshot.get("snapshot_url"), snapshot.get("snapshot_type", ""), f"snapshot of viewpoint {viewpoint_guid}")


class ViewpointBitmapView(BcfView):
    def get(self, request, project_id, topic_guid, viewpoint_guid, bitmap_guid):
        issue = topics.topic_get(project_id, topic_guid)
        viewpoint = topics.viewpoint_get(issue, viewpoint_guid)
        for index, bitmap in enumerate(viewpoint.get("bitmaps") or ()):
            if topics.bitmap_guid(viewpoint["guid"], index) == bitmap_guid.lower():
                return _image(request, issue, bitmap.get("bitmap_url"), bitmap["bitmap_type"], f"bitmap {bitmap_guid}")
        raise NotFound(f"bitmap {bitmap_guid} not found in viewpoint {viewpoint_guid}")


class _ComponentsView(BcfView):
    part = ""

    def get(self, request, project_id, topic_guid, viewpoint_guid):
        issue = topics.topic_get(project_id, topic_guid)
        return bare({self.part: topics.viewpoint_components(topics.viewpoint_get(issue, viewpoint_guid))[self.part]})


class ViewpointSelectionView(_ComponentsView):
    """GET selection: {selection: [component]}."""

    part = "selection"


class ViewpointColoringView(_ComponentsView):
    """GET coloring: {coloring: [{color, components}]}."""

    part = "coloring"


class ViewpointVisibilityView(_ComponentsView):
    """GET visibility: {visibility: {default_visibility (false when the viewpoint says nothing), exceptions, view_setup_hints}}."""

    part = "visibility"
