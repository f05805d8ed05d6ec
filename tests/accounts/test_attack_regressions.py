"""What an attacker's probe of the accounts feature (issue 33) found, one test per finding: each failed on the code
of its day and states what must hold now."""

from __future__ import annotations

import io
import json
import re
import zipfile
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts_app.models import ApiToken, AuditEvent, ProjectMember, ShareLink
from accounts_app.secrets import SHARE_COOKIE, SHARE_PREFIX, new_secret, sha256
from chat_app.models import ChatSession
from issues_app.models import Comment, Issue
from serving.http_server import RequestHead
from tests.accounts.people import bearer, person, post, project_with_models, signed_in, token_of
from viewer_gateway.server import header_check

pytestmark = pytest.mark.django_db


@pytest.fixture
def team():
    project, models = project_with_models("Tower", models=2)
    people = {role: person(name) for role, name in (("owner", "olga"), ("editor", "ed"), ("reviewer", "rita"), ("viewer", "vic"))}
    for role, user in people.items():
        ProjectMember.objects.create(project=project, user=user, role=role)
    return project, models, people


def share_link_client(project, model_ids=()) -> Client:
    secret = new_secret(SHARE_PREFIX)
    ShareLink.objects.create(project=project, model_ids=list(model_ids), secret_sha256=sha256(secret),
                             expires_at=timezone.now() + timedelta(days=1))
    client = Client()
    client.cookies[SHARE_COOKIE] = secret
    return client


def code_of(response) -> int:
    return response.json()["code"]


def test_an_anonymous_upload_is_refused_before_its_body_is_read_in_accounts_mode(team, viewer_config):
    """Measured on a real run_gateway: an anonymous 150 MB POST /api/v1/models was read whole (server RSS +154 MB)
    before the 401, because the edge lets every credential-less request through when no apiToken is set."""
    viewer_config(apiToken="")
    head = RequestHead("POST", "/api/v1/models", {"host": "testserver", "content-type": "multipart/form-data; boundary=x",
                                                  "content-length": str(150 << 20)}, "127.0.0.1", "http")
    assert header_check(head) is not None, "the edge accepted an anonymous 150 MB upload in accounts mode"


def test_a_bcf_reimport_cannot_rewrite_a_verified_comment_of_someone_else(team):
    _, models, people = team
    model = models[0]
    olga, rita = signed_in(people["owner"]), signed_in(people["reviewer"])
    issue_id = olga.post(f"/api/v1/models/{model.id}/issues", {"issue": json.dumps({"title": "Door too narrow"})}).json()["data"]["id"]
    assert code_of(post(olga, f"/api/v1/models/{model.id}/issues/{issue_id}/comments", {"text": "I approve nothing"})) == 0
    archive = zipfile.ZipFile(io.BytesIO(b"".join(rita.get(f"/api/v1/models/{model.id}/issues.bcfzip").streaming_content)))
    forged = io.BytesIO()
    with zipfile.ZipFile(forged, "w") as out:
        for entry in archive.infolist():
            data = archive.read(entry.filename)
            if entry.filename.endswith("markup.bcf"):
                text = data.decode().replace("I approve nothing", "I approve everything")
                text = re.sub(r"(<Comment Guid=\"[^\"]+\">\s*<Date>)[^<]*(</Date>)", r"\g<1>2099-01-01T00:00:00Z\g<2>", text)
                data = text.encode()
            out.writestr(entry, data)
    forged.seek(0)
    forged.name = "forged.bcfzip"
    rita.post(f"/api/v1/models/{model.id}/issues/bcf", {"file": forged})
    comment = Comment.objects.get(issue_id=issue_id)
    assert not (comment.text == "I approve everything" and comment.author == "olga" and comment.author_verified), \
        "a reviewer's BCF import rewrote the owner's comment, which still reads as verified by the owner"


def test_a_read_only_token_cannot_revoke_its_owners_other_tokens(team):
    write, read = token_of("ed", "write"), token_of("ed", "read")
    assert code_of(bearer(read["token"]).delete(f"/api/v1/auth/tokens/{write['tokenId']}")) == 40300
    assert ApiToken.objects.get(pk=write["tokenId"]).revoked_at is None


def test_a_token_cannot_make_a_token_that_outlives_it(team):
    expiring = token_of("ed", "read", expiresAt=(timezone.now() + timedelta(hours=1)).isoformat())
    answer = post(bearer(expiring["token"]), "/api/v1/auth/tokens", {"name": "forever", "scope": "read"}).json()
    assert answer["code"] != 0 or answer["data"]["expiresAt"] is not None, "an expiring token made a token that never expires"


def test_read_only_callers_open_no_chat_session(team):
    project, _, _ = team
    read = token_of("ed", "read")
    assert code_of(post(bearer(read["token"]), "/api/v1/chat/sessions", {"projectId": project.id})) == 40300
    assert code_of(post(share_link_client(project), "/api/v1/chat/sessions", {"projectId": project.id})) == 40300
    assert not ChatSession.objects.filter(project=project).exists()


def test_a_share_link_to_one_model_opens_nothing_project_wide(team):
    project, models, _ = team
    session = ChatSession.objects.create(project=project)
    link = share_link_client(project, model_ids=[models[0].id])
    assert code_of(link.get(f"/api/v1/models/{models[1].id}")) == 40400  # the other model: hidden, as it should be
    assert code_of(link.get(f"/api/v1/chat/sessions/{session.id}/messages")) == 40400
    assert code_of(link.get(f"/api/v1/projects/{project.id}/members")) == 40400
    assert code_of(link.get(f"/api/v1/projects/{project.id}/ids")) == 40400


def test_deleting_an_issue_is_in_the_audit_trail(team):
    _, models, people = team
    issue = Issue.objects.create(model=models[0], title="leak", author="olga", author_verified=True)
    assert code_of(signed_in(people["reviewer"]).delete(f"/api/v1/models/{models[0].id}/issues/{issue.id}")) == 0
    assert AuditEvent.objects.filter(action__startswith="issue.").exists(), "a reviewer deleted the owner's issue and the trail has nothing"


def test_disabling_the_last_active_user_does_not_reopen_the_open_mode(viewer_config):
    viewer_config(apiToken="")
    ada = person("ada", "admin")
    ada.is_active = False  # the admin's "Active" box: nothing stops it for the last account
    ada.save(update_fields=["is_active"])
    assert code_of(Client().get("/api/v1/users")) == 40100, "with every account disabled, anyone is the admin again"

