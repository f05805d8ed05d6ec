"""What the chat hears from the apps below it (models_app signals): project events become frames of the project's
session, a project being deleted first has its running turn aborted."""

from __future__ import annotations

import logging

from chat_app import events, frames
from chat_app.models import ChatSession

logger = logging.getLogger(__name__)


def _session_of(project_id: str) -> str | None:
    return ChatSession.objects.filter(project_id=project_id).values_list("id", flat=True).first()


def publish_project_event(sender, *, project_id: str, event: str, data: dict, **kwargs) -> None:
    session_id = _session_of(project_id)
    if session_id is not None:
        events.publish_for_viewer(session_id, event, frames.viewer_frame(session_id, data, events.frame_origin.get()))


def abort_turn_of_deleted_project(sender, *, project_id: str, **kwargs) -> None:
    from chat_app.selectors import visible_sessions
    from chat_app.services import turn_abort

    # a project purged from the trash had its turn aborted when it went there (its session is hidden since)
    session_id = visible_sessions().filter(project_id=project_id).values_list("id", flat=True).first()
    if session_id is not None:
        turn_abort(session_id)


def end_turns_cut_by_a_restart(**kwargs) -> None:
    from chat_app.lifecycle import recover_cut_turns

    cut = recover_cut_turns()
    if cut:
        logger.warning("chat turns cut by a restart ended with session.error: %s", ", ".join(cut))
