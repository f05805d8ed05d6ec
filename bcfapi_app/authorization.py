"""What the caller may do in a BCF project, as the API's action lists (README 3.1.5): one table from the project
role's capabilities (accounts_app.roles), decided by accounts_app.policy like every route.

    >>> actions = ProjectActions.of(principal, project_id)
    >>> actions.project  # ["createTopic", "createDocument"] for a reviewer of a project with an IFC model
"""

from __future__ import annotations

from dataclasses import dataclass

from accounts_app.policy import Scope, decide
from accounts_app.roles import Capability
from api.principal import Principal
from models_app.selectors import project_model_of_format

# the actions each capability grants, per entity (a capability not listed grants none there)
PROJECT_ACTIONS: dict[Capability, tuple[str, ...]] = {
    Capability.OWN: ("update",),
    Capability.REVIEW: ("createTopic", "createDocument"),
}
TOPIC_ACTIONS: dict[Capability, tuple[str, ...]] = {
    Capability.REVIEW: ("update", "updateRelatedTopics", "updateDocumentReferences", "updateFiles", "createComment", "createViewpoint", "delete"),
}
COMMENT_ACTIONS: dict[Capability, tuple[str, ...]] = {Capability.REVIEW: ("update", "delete")}
VIEWPOINT_ACTIONS: dict[Capability, tuple[str, ...]] = {Capability.REVIEW: ("delete",)}
# the capabilities an action list may depend on, in the order their actions are listed
ACTION_CAPABILITIES = (Capability.OWN, Capability.REVIEW)


def _granted(table: dict[Capability, tuple[str, ...]], capabilities: frozenset[Capability]) -> list[str]:
    return [action for capability in ACTION_CAPABILITIES if capability in capabilities for action in table.get(capability, ())]


@dataclass(frozen=True)
class ProjectActions:
    """The caller's default actions in one project (a read-only token, a share link or a viewer: none)."""

    capabilities: frozenset[Capability]
    has_ifc_model: bool

    @classmethod
    def of(cls, principal: Principal, project_id: str) -> ProjectActions:
        scope = Scope(project_id=project_id)
        capabilities = frozenset(c for c in ACTION_CAPABILITIES if decide(principal, c, scope).allowed)
        return cls(capabilities, project_model_of_format(project_id, "ifc") is not None)

    @property
    def project(self) -> list[str]:
        # new topics go to the project's IFC model: a project without one cannot take them
        return [a for a in _granted(PROJECT_ACTIONS, self.capabilities) if a != "createTopic" or self.has_ifc_model]

    @property
    def topic(self) -> list[str]:
        return _granted(TOPIC_ACTIONS, self.capabilities)

    @property
    def comment(self) -> list[str]:
        return _granted(COMMENT_ACTIONS, self.capabilities)

    @property
    def viewpoint(self) -> list[str]:
        return _granted(VIEWPOINT_ACTIONS, self.capabilities)
