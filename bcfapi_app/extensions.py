"""A project's extensions (extensions_GET): the values its topics may take, from what the project uses plus the
suggestions the web client offers (frontend/src/issue_fields.js), its members as users, and the caller's actions."""

from __future__ import annotations

from accounts_app.services.members import member_list
from api.principal import Principal
from bcfapi_app.authorization import ProjectActions
from bcfapi_app.topics import project_issues, topic_statuses
from issues_app.bcf import DEFAULT_TOPIC_TYPE, PROVENANCE_LABEL_PREFIX

# the web client's suggestions (frontend/src/issue_fields.js SUGGESTIONS); values in use are added
SUGGESTED = {
    "topic_type": (DEFAULT_TOPIC_TYPE, "Clash", "Request", "Remark", "Fault", "Inquiry", "Info", "IDS failure"),
    "priority": ("Critical", "High", "Normal", "Low"),
    "stage": ("Design", "Tender", "Construction", "Handover"),
}


def _with_used(suggested: tuple[str, ...], used) -> list[str]:
    """The suggestions in their order, then the other values in use, sorted."""
    extra = sorted({value for value in used if value} - set(suggested))
    return [*suggested, *extra]


def project_extensions(project_id: str, principal: Principal) -> dict:
    issues = project_issues(project_id)
    used = {field: issues.values_list(field, flat=True).distinct() for field in ("topic_type", "priority", "stage")}
    labels = {label for labels in issues.values_list("labels", flat=True) for label in labels or ()}
    actions = ProjectActions.of(principal, project_id)
    return {
        "topic_type": _with_used(SUGGESTED["topic_type"], used["topic_type"]),
        "topic_status": topic_statuses(project_id),
        "topic_label": sorted(label for label in labels if not label.startswith(PROVENANCE_LABEL_PREFIX)),
        "snippet_type": [],
        "priority": _with_used(SUGGESTED["priority"], used["priority"]),
        "users": sorted(member.user.get_username() for member in member_list(project_id)),
        "stage": _with_used(SUGGESTED["stage"], used["stage"]),
        "project_actions": actions.project,
        "topic_actions": actions.topic,
        "comment_actions": actions.comment,
    }
