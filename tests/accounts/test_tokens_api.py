"""/api/v1/auth/tokens through the real access middleware: personal tokens made by a session, a token or a password
(throttled by django-axes), shown once, stored hashed, listed without secrets, revoked; revoked and expired tokens
answer 40100, a read-only one changes nothing."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts_app.models import ApiToken, AuditEvent, ProjectMember
from accounts_app.secrets import sha256
from tests.accounts.people import PASSWORD, bearer, error, person, post, project_with_models, signed_in, token_of
from tests.helpers import ok

pytestmark = pytest.mark.django_db
TOKENS = "/api/v1/auth/tokens"
OPERATOR_TOKEN = "operator-secret-for-tokens"


@pytest.fixture
def ana():
    return person("ana", display_name="Ana")


def test_a_signed_in_user_makes_a_token_sees_its_secret_once_and_it_is_stored_hashed(ana):
    session = signed_in(ana)
    made = ok(post(session, TOKENS, {"name": "laptop", "scope": "write", "expiresAt": "2099-01-01T00:00:00Z"}))
    assert set(made) == {"tokenId", "token", "name", "scope", "expiresAt"}
    assert made["token"].startswith("bmr_") and made["name"] == "laptop" and made["scope"] == "write"
    assert made["expiresAt"].startswith("2099-01-01T00:00:00")
    stored = ApiToken.objects.get(pk=made["tokenId"])
    assert stored.user == ana and stored.secret_sha256 == sha256(made["token"])
    assert made["token"] not in json.dumps(list(ApiToken.objects.values()), default=str)
    listed = session.get(TOKENS)
    assert made["token"] not in listed.content.decode() and stored.secret_sha256 not in listed.content.decode()
    [entry] = ok(listed)
    assert entry == {"tokenId": made["tokenId"], "name": "laptop", "scope": "write", "createdAt": entry["createdAt"],
                     "expiresAt": made["expiresAt"], "lastUsedAt": None, "revoked": False}
    event = AuditEvent.objects.get(action="token.create")
    assert (event.username, event.via, event.object) == ("ana", "session", f"token:{made['tokenId']}")


def test_a_token_signs_its_requests_and_records_its_last_use(ana):
    made = token_of("ana", "read")
    assert ok(bearer(made["token"]).get("/api/v1/auth/me")) == {"username": "ana", "displayName": "Ana", "role": "user", "via": "token"}
    assert ok(signed_in(ana).get(TOKENS))[0]["lastUsedAt"] is not None


def test_username_and_password_in_the_body_make_a_token_without_a_session(ana):
    made = token_of("ana", "write")
    assert ApiToken.objects.get(pk=made["tokenId"]).user == ana
    assert AuditEvent.objects.get(action="token.create").username == "ana"
    assert "wrong username or password" in error(post(Client(), TOKENS, {"name": "t", "scope": "read", "username": "ana", "password": "nope"}), 401, 40100)
    assert "both" in error(post(Client(), TOKENS, {"name": "t", "scope": "read", "username": "ana"}), 400, 40001)


def test_repeated_wrong_passwords_lock_the_username_out_for_this_address(ana, settings):
    """The lockout is django-axes' (5 failures of one username from one address); its answer is 429."""
    attempt = {"name": "t", "scope": "read", "username": "ana", "password": "guess"}
    for _attempt in range(settings.AXES_FAILURE_LIMIT - 1):
        error(post(Client(), TOKENS, attempt), 401, 40100)
    assert post(Client(), TOKENS, attempt).status_code == 429
    assert post(Client(), TOKENS, {**attempt, "password": PASSWORD}).status_code == 429
    assert post(Client(), TOKENS, {**attempt, "username": "someone-else"}).status_code == 401
    assert not ApiToken.objects.exists()


def test_the_lockout_answer_is_the_envelope_with_the_lockout_callable(ana, settings):
    settings.AXES_LOCKOUT_CALLABLE = "accounts_app.views.lockout_response"
    attempt = {"name": "t", "scope": "read", "username": "ana", "password": "guess"}
    for _attempt in range(settings.AXES_FAILURE_LIMIT - 1):
        error(post(Client(), TOKENS, attempt), 401, 40100)
    error(post(Client(), TOKENS, attempt), 429, 42900)
    assert "too many failed sign-ins" in error(post(Client(), TOKENS, {**attempt, "password": PASSWORD}), 429, 42900)


def test_a_request_without_any_credential_is_40100_and_an_account_less_caller_is_40001(ana, viewer_config):
    error(post(Client(), TOKENS, {"name": "t", "scope": "read"}), 401, 40100)
    error(Client().get(TOKENS), 401, 40100)
    viewer_config(apiToken=OPERATOR_TOKEN)
    message = error(post(bearer(OPERATOR_TOKEN), TOKENS, {"name": "t", "scope": "read"}), 400, 40001)
    assert "a token belongs to an account" in message
    assert ok(bearer(OPERATOR_TOKEN).get(TOKENS)) == []


def test_the_open_mode_has_no_account_to_give_a_token():
    assert "a token belongs to an account" in error(post(Client(), TOKENS, {"name": "t", "scope": "read"}), 400, 40001)


@pytest.mark.parametrize(("body", "field"), [
    ({"scope": "read"}, "name"),
    ({"name": 7, "scope": "read"}, "name"),
    ({"name": "t", "scope": "admin"}, "scope"),
    ({"name": "t"}, "scope"),
    ({"name": "t", "scope": "read", "expiresAt": "next week"}, "expiresAt"),
    ({"name": "t", "scope": "read", "expiresAt": "2001-01-01T00:00:00Z"}, "expiresAt"),
])
def test_bad_token_requests_are_40001_naming_the_field(ana, body, field):
    message = error(post(signed_in(ana), TOKENS, body), 400, 40001)
    assert message.startswith(f"{field}:"), message
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize("body", ["{", "[]", "null"])
def test_a_token_body_that_is_no_json_object_is_40001(ana, body):
    error(post(signed_in(ana), TOKENS, body), 400, 40001)


def test_a_read_only_token_makes_read_tokens_only_and_changes_nothing(ana):
    reader = bearer(token_of("ana", "read")["token"])
    assert "read-only" in error(post(reader, TOKENS, {"name": "w", "scope": "write"}), 403, 40300)
    assert ok(post(reader, TOKENS, {"name": "r", "scope": "read"}))["scope"] == "read"
    project, _ = project_with_models()
    ProjectMember.objects.create(project=project, user=ana, role="owner")
    in_a_week = (timezone.now() + timedelta(days=7)).isoformat()
    error(post(reader, f"/api/v1/projects/{project.id}/share-links", {"expiresAt": in_a_week}), 403, 40300)
    error(post(reader, f"/api/v1/projects/{project.id}/members/ana", {"role": "viewer"}, "put"), 403, 40300)
    assert ok(reader.get(f"/api/v1/projects/{project.id}/members"))[0]["role"] == "owner"


def test_a_revoked_token_answers_40100_and_revoking_is_audited(ana):
    made = token_of("ana")
    session = signed_in(ana)
    revoked = ok(session.delete(f"{TOKENS}/{made['tokenId']}"))
    assert revoked["revoked"] is True and "token" not in revoked
    assert "revoked" in error(bearer(made["token"]).get("/api/v1/auth/me"), 401, 40100)
    ok(session.delete(f"{TOKENS}/{made['tokenId']}"))  # again: nothing changes, nothing more audited
    assert AuditEvent.objects.filter(action="token.revoke", object=f"token:{made['tokenId']}").count() == 1


def test_a_token_revokes_itself(ana):
    made = token_of("ana")
    ok(bearer(made["token"]).delete(f"{TOKENS}/{made['tokenId']}"))
    error(bearer(made["token"]).get(TOKENS), 401, 40100)


def test_an_expired_token_answers_40100(ana):
    made = token_of("ana")
    ApiToken.objects.filter(pk=made["tokenId"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert "expired" in error(bearer(made["token"]).get("/api/v1/auth/me"), 401, 40100)


def test_someone_elses_token_is_not_found_and_lists_hold_only_ones_own(ana):
    theirs = token_of("ana")
    ben = person("ben")
    token_of("ben")
    error(signed_in(ben).delete(f"{TOKENS}/{theirs['tokenId']}"), 404, 40400)
    error(signed_in(ben).delete(f"{TOKENS}/tok_000000000000"), 404, 40400)
    assert ApiToken.objects.get(pk=theirs["tokenId"]).revoked_at is None
    assert [entry["tokenId"] for entry in ok(signed_in(ana).get(TOKENS))] == [theirs["tokenId"]]


def test_a_session_needs_the_csrf_token_to_make_a_token(ana):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(ana)
    assert "CSRF" in error(post(browser, TOKENS, {"name": "t", "scope": "read"}), 403, 40300)
    assert not ApiToken.objects.exists()
