"""The projects IDS files belong to. The only module of checks_app (besides the foreign key in models.py) that knows
where projects live (chat_app today), so moving Project means changing these lines."""

from __future__ import annotations

from models_app.models import IfcModel, Project
from models_app.selectors import project_get

__all__ = ["Project", "project_get", "project_of_model"]


def project_of_model(model: IfcModel) -> Project | None:
    return model.projects.first()
