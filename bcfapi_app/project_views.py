"""BCF API 3.0 project services (README 3.1): the projects, one project (GET, PUT its name), its extensions."""

from __future__ import annotations

from api.principal import Principal
from api.views import json_object
from bcfapi_app.extensions import project_extensions
from bcfapi_app.projects import project_json, project_list, project_rename
from bcfapi_app.responses import BcfView, bare, check_if_match
from models_app.selectors import project_get


class ProjectListView(BcfView):
    def get(self, request):
        principal = Principal.of(request)
        return bare([project_json(project, principal) for project in project_list(principal)])


class ProjectDetailView(BcfView):
    def get(self, request, project_id):
        return bare(project_json(project_get(project_id), Principal.of(request)))

    def put(self, request, project_id):
        principal = Principal.of(request)
        check_if_match(request, project_json(project_get(project_id), principal))
        body = json_object(request)
        return bare(project_json(project_rename(project_id=project_id, name=body.get("name"), by=principal), principal))


class ExtensionsView(BcfView):
    def get(self, request, project_id):
        return bare(project_extensions(project_id, Principal.of(request)))
