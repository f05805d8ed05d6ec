"""BCF projects are this service's projects (models_app.Project): which ones a caller sees, how one reads as
project_GET, and the project PUT (its name is the project's title)."""

from __future__ import annotations

from accounts_app.audit import audit_record
from accounts_app.policy import visible_project_ids
from api.principal import Principal
from bcfapi_app.authorization import ProjectActions
from core.errors import Invalid
from models_app.models import Project
from models_app.selectors import project_get

NAME_MAX_LENGTH = Project._meta.get_field("title").max_length


def project_json(project: Project, principal: Principal) -> dict:
    return {
        "project_id": project.id,
        "name": project.title,
        "authorization": {"project_actions": ProjectActions.of(principal, project.id).project},
    }


def project_list(principal: Principal) -> list[Project]:
    """The projects the principal may read (outside the trash), newest first."""
    ids = visible_project_ids(principal)
    projects = Project.objects.all() if ids is None else Project.objects.filter(pk__in=ids)
    return list(projects.order_by("-created_at"))


def project_rename(*, project_id: str, name, by: Principal) -> Project:
    """PUT project: the name becomes the project's title (audited)."""
    if not isinstance(name, str) or not name.strip():
        raise Invalid("name: a non-empty string is required", data={"field": "name"})
    if len(name) > NAME_MAX_LENGTH:
        raise Invalid(f"name: at most {NAME_MAX_LENGTH} characters", data={"field": "name"})
    project = project_get(project_id)
    old = project.title
    project.title = name.strip()
    project.save(update_fields=["title"])
    audit_record(by, "project.rename", object=f"project:{project.id}", project_id=project.id, detail={"from": old, "to": project.title})
    return project
