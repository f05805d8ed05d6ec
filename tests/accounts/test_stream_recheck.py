"""An open event stream is checked again while it stays open: it ends when its caller's credential or role goes."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.utils import timezone

from accounts_app.models import ProjectMember, ShareLink
from accounts_app.secrets import SHARE_PREFIX, new_secret, sha256
from api.principal import Principal, ShareGrant, Via
from chat_app.access import stream_still_allowed
from chat_app.models import ChatSession
from chat_app.stream import _frames
from tests.accounts.people import person, project_with_models

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def session_of_project():
    project, _ = project_with_models("Tower", models=1)
    return project, ChatSession.objects.create(project=project)


def test_a_removed_member_a_signed_out_session_and_a_revoked_link_lose_the_stream(session_of_project):
    project, chat = session_of_project
    user = person("vic")
    ProjectMember.objects.create(project=project, user=user, role="viewer")
    store = SessionStore()
    store.create()
    principal = Principal(name="vic", via=Via.SESSION, user_id=user.pk, role="user")
    assert stream_still_allowed(principal, store.session_key, chat.id)
    store.delete()  # signed out
    assert not stream_still_allowed(principal, store.session_key, chat.id)
    store.create()
    ProjectMember.objects.filter(user=user).delete()
    assert not stream_still_allowed(principal, store.session_key, chat.id)

    link = ShareLink.objects.create(project=project, secret_sha256=sha256(new_secret(SHARE_PREFIX)), expires_at=timezone.now() + timedelta(hours=1))
    by_link = Principal(name=f"share link {link.id}", via=Via.SHARE_LINK, role="guest", read_only=True,
                        share=ShareGrant(link_id=link.id, project_id=project.id))
    assert stream_still_allowed(by_link, None, chat.id)
    ShareLink.objects.filter(pk=link.id).update(revoked_at=timezone.now())
    assert not stream_still_allowed(by_link, None, chat.id)


def test_the_stream_ends_at_the_first_failed_check(session_of_project):
    _, chat = session_of_project
    answers = iter([True, True, False])
    asked = []

    async def still_allowed():
        asked.append(1)
        return next(answers)

    async def read_all():
        return [frame async for frame in _frames(chat.id, None, 0.05, still_allowed)]

    frames = asyncio.run(asyncio.wait_for(read_all(), timeout=30))
    assert len(asked) == 3  # it went on while the check held and ended at the first that failed
    assert frames[0].startswith("retry:") and ": ping\n\n" in frames
