"""BCF API 3.0 files (3.3): the project's IFC models as files_information, and a topic's header files."""

from __future__ import annotations

from django.db.models import Max

from api.principal import Principal
from bcfapi_app import topic_services, topics
from bcfapi_app.responses import BcfView, bare
from core.errors import NotFound
from models_app.models import IfcModel
from models_app.selectors import model_current_version, model_metadata, project_get, project_links


def _ifc_project(model_id: str) -> str | None:
    """The GlobalId of the model's IfcProject (its conversion's metadata), None before a conversion."""
    try:
        return model_metadata(model_id).get("projectId")
    except (NotFound, ValueError):
        return None


def files_information(request, project_id: str) -> list[dict]:
    """project_file_information of each IFC model of the project (in the order they were added): model name,
    discipline and version to show; the file with our download URL as reference."""
    project_get(project_id)  # 404 for an unknown project
    answer = []
    for link in project_links(project_id).filter(model__format=IfcModel.Format.IFC):
        model = link.model
        date = model.uploaded_revisions.aggregate(last=Max("uploaded_at"))["last"] or model.created_at
        answer.append({
            "display_information": [
                {"field_display_name": "Model", "field_value": model.name},
                {"field_display_name": "Discipline", "field_value": link.discipline or "-"},
                {"field_display_name": "Version", "field_value": model_current_version(model.id)},
            ],
            "file": {"ifc_project": _ifc_project(model.id), "ifc_spatial_structure_element": None, "filename": model.name, "date": topics.iso(date),
                     "reference": request.build_absolute_uri(f"/api/v1/models/{model.id}/download")},
        })
    return answer


class FilesInformationView(BcfView):
    def get(self, request, project_id):
        return bare(files_information(request, project_id))


class TopicFilesView(BcfView):
    def get(self, request, project_id, topic_guid):
        return bare(topic_services.topic_files(topics.topic_get(project_id, topic_guid)))

    def put(self, request, project_id, topic_guid):
        """PUT files: the topic's header files replaced (files of files_information, or ones it names already)."""
        issue = topics.topic_get(project_id, topic_guid)
        known = [entry["file"] for entry in files_information(request, project_id)]
        issue = topic_services.topic_files_replace(issue=issue, body=request.data, known=known, principal=Principal.of(request))
        return bare(topic_services.topic_files(issue))
