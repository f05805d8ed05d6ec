"""/api/v1/users and /api/v1/auth/me through the real access middleware: accounts made and changed by admins and the
operator, never a password in an answer, the server role kept in step with Django's admin flags, audited."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.test import Client

from accounts_app.models import Account, ApiToken, AuditEvent, ProjectMember
from accounts_app.services import server_role_sync
from tests.accounts.people import PASSWORD, bearer, error, person, post, project_with_models, signed_in, token_of
from tests.helpers import ok

pytestmark = pytest.mark.django_db
User = get_user_model()
OPERATOR_TOKEN = "operator-secret-for-users"
VALIDATORS = [{"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
              {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"}]


@pytest.fixture
def admin():
    return person("root", "admin", display_name="Root Admin")


@pytest.fixture
def admin_client(admin):
    return signed_in(admin)


def test_an_admin_creates_lists_and_reads_users_without_any_password(admin_client):
    created = ok(post(admin_client, "/api/v1/users", {"username": "ana", "password": PASSWORD, "email": "ana@example.org",
                                                     "displayName": "Ana Lima", "role": "user"}))
    assert {key: created[key] for key in ("username", "email", "displayName", "role", "active")} == {
        "username": "ana", "email": "ana@example.org", "displayName": "Ana Lima", "role": "user", "active": True}
    listed = ok(admin_client.get("/api/v1/users"))
    assert [(entry["username"], entry["role"]) for entry in listed] == [("ana", "user"), ("root", "admin")]
    detail = admin_client.get("/api/v1/users/ana")
    assert ok(detail)["displayName"] == "Ana Lima"
    for response in (detail, admin_client.get("/api/v1/users")):
        assert b"password" not in response.content and b"pbkdf2" not in response.content
    ana = User.objects.get(username="ana")
    assert ana.check_password(PASSWORD) and not ana.is_superuser and not ana.is_staff
    event = AuditEvent.objects.get(action="user.create")
    assert (event.username, event.via, event.object, event.detail) == ("root", "session", "user:ana", {"role": "user"})


def test_role_admin_is_djangos_superuser_and_staff_and_a_role_change_is_audited(admin_client):
    ok(post(admin_client, "/api/v1/users", {"username": "ben", "password": PASSWORD, "role": "admin"}))
    ben = User.objects.get(username="ben")
    assert ben.is_superuser and ben.is_staff and ben.account.role == "admin"
    assert ok(post(admin_client, "/api/v1/users/ben", {"role": "guest"}, "patch"))["role"] == "guest"
    ben.refresh_from_db()
    assert not ben.is_superuser and not ben.is_staff and ben.account.role == "guest"
    event = AuditEvent.objects.get(action="user.role")
    assert (event.object, event.detail) == ("user:ben", {"from": "admin", "to": "guest"})
    ok(post(admin_client, "/api/v1/users/ben", {"displayName": "Ben", "email": "ben@example.org"}, "patch"))
    assert AuditEvent.objects.filter(action="user.role").count() == 1  # no role change, no role record


def test_a_patched_password_signs_in_and_the_old_one_does_not(admin_client):
    person("carl")
    ok(post(admin_client, "/api/v1/users/carl", {"password": "a brand new pass phrase"}, "patch"))
    carl = User.objects.get(username="carl")
    assert carl.check_password("a brand new pass phrase") and not carl.check_password(PASSWORD)


def test_a_user_without_password_cannot_sign_in_with_one(admin_client):
    ok(post(admin_client, "/api/v1/users", {"username": "sso-only", "role": "guest"}))
    assert not User.objects.get(username="sso-only").has_usable_password()


@pytest.mark.parametrize("username", ["ana", "ANA"])
def test_an_existing_username_is_a_conflict(admin_client, username):
    person("ana")
    message = error(post(admin_client, "/api/v1/users", {"username": username, "password": PASSWORD}), 409, 40900)
    assert message.startswith("username:")


@pytest.mark.parametrize(("body", "field"), [
    ({"username": "two words", "password": PASSWORD}, "username"),
    ({"username": "", "password": PASSWORD}, "username"),
    ({"username": "x" * 151, "password": PASSWORD}, "username"),
    ({"username": 42, "password": PASSWORD}, "username"),
    ({"password": PASSWORD}, "username"),
    ({"username": "dana", "password": PASSWORD, "role": "boss"}, "role"),
    ({"username": "dana", "password": PASSWORD, "email": "not an address"}, "email"),
    ({"username": "dana", "password": PASSWORD, "displayName": ["a", "list"]}, "displayName"),
    ({"username": "dana", "password": 12345678901234}, "password"),
])
def test_bad_fields_are_40001_naming_the_field(admin_client, body, field):
    message = error(post(admin_client, "/api/v1/users", body), 400, 40001)
    assert message.startswith(f"{field}:"), message
    assert not User.objects.filter(username="dana").exists()


@pytest.mark.parametrize("password", ["short", "password1234"])
def test_djangos_password_validators_decide(admin_client, settings, password):
    settings.AUTH_PASSWORD_VALIDATORS = VALIDATORS
    message = error(post(admin_client, "/api/v1/users", {"username": "erin", "password": password}), 400, 40001)
    assert message.startswith("password:"), message
    person("fred")
    error(post(admin_client, "/api/v1/users/fred", {"password": password}, "patch"), 400, 40001)
    assert User.objects.get(username="fred").check_password(PASSWORD)


@pytest.mark.parametrize("body", ["{not json", "[1, 2]", '"text"'])
def test_a_body_that_is_no_json_object_is_40001(admin_client, body):
    error(post(admin_client, "/api/v1/users", body), 400, 40001)
    error(post(admin_client, "/api/v1/users/root", body, "patch"), 400, 40001)


def test_an_unknown_user_is_40400(admin_client):
    error(admin_client.get("/api/v1/users/nobody"), 404, 40400)
    error(post(admin_client, "/api/v1/users/nobody", {"role": "user"}, "patch"), 404, 40400)
    error(admin_client.delete("/api/v1/users/nobody"), 404, 40400)


def test_deleting_a_user_takes_its_memberships_and_tokens_and_is_audited(admin_client):
    gina = person("gina")
    project, _ = project_with_models()
    ProjectMember.objects.create(project=project, user=gina, role="editor")
    secret = token_of("gina")["token"]
    assert ok(admin_client.delete("/api/v1/users/gina")) is None
    assert not User.objects.filter(username="gina").exists() and not ProjectMember.objects.exists()
    error(bearer(secret).get("/api/v1/auth/me"), 401, 40100)
    assert AuditEvent.objects.filter(action="user.delete", object="user:gina", username="root").exists()


def test_an_admin_cannot_delete_itself_nor_the_last_admin_be_deleted_or_demoted(admin_client, viewer_config):
    message = error(admin_client.delete("/api/v1/users/root"), 409, 40900)
    assert "own account" in message
    viewer_config(apiToken=OPERATOR_TOKEN)
    operator = bearer(OPERATOR_TOKEN)
    assert "last admin" in error(operator.delete("/api/v1/users/root"), 409, 40900)
    assert "last admin" in error(post(operator, "/api/v1/users/root", {"role": "user"}, "patch"), 409, 40900)
    ok(post(operator, "/api/v1/users", {"username": "second", "password": PASSWORD, "role": "admin"}))
    ok(operator.delete("/api/v1/users/root"))
    assert list(User.objects.filter(is_superuser=True).values_list("username", flat=True)) == ["second"]


def test_the_operator_token_manages_users_and_is_audited_as_the_operator(viewer_config):
    viewer_config(apiToken=OPERATOR_TOKEN)
    operator = bearer(OPERATOR_TOKEN)
    ok(post(operator, "/api/v1/users", {"username": "hana", "password": PASSWORD, "role": "guest"}))
    assert AuditEvent.objects.get(action="user.create").via == "operator"


def test_the_first_user_made_in_the_open_mode_turns_accounts_on():
    local = Client()
    assert ok(local.get("/api/v1/auth/me")) == {"username": "local-user", "displayName": "", "role": "admin", "via": "open"}
    ok(post(local, "/api/v1/users", {"username": "first", "password": PASSWORD, "role": "admin"}))
    error(local.get("/api/v1/users"), 401, 40100)


@pytest.mark.parametrize("role", ["user", "guest"])
def test_users_and_guests_may_not_manage_users(role):
    person("root", "admin")
    client = signed_in(person("ivan", role))
    error(client.get("/api/v1/users"), 403, 40300)
    error(post(client, "/api/v1/users", {"username": "x", "password": PASSWORD}), 403, 40300)
    error(post(client, "/api/v1/users/root", {"role": "guest"}, "patch"), 403, 40300)
    error(client.delete("/api/v1/users/root"), 403, 40300)
    assert User.objects.get(username="root").is_superuser


def test_a_read_only_token_of_an_admin_does_not_administer(admin):
    reader = bearer(token_of("root", "read")["token"])
    error(reader.get("/api/v1/users"), 403, 40300)
    error(post(reader, "/api/v1/users", {"username": "x", "password": PASSWORD}), 403, 40300)


def test_me_says_who_and_how(admin, viewer_config):
    assert ok(signed_in(admin).get("/api/v1/auth/me")) == {"username": "root", "displayName": "Root Admin", "role": "admin", "via": "session"}
    Account.objects.filter(user=admin).update(display_name="")
    assert ok(bearer(token_of("root", "read")["token"]).get("/api/v1/auth/me")) == {
        "username": "root", "displayName": "", "role": "admin", "via": "token"}
    guest = person("jo", "guest", display_name="Jo")
    assert ok(signed_in(guest).get("/api/v1/auth/me"))["role"] == "guest"
    viewer_config(apiToken=OPERATOR_TOKEN)
    assert ok(bearer(OPERATOR_TOKEN).get("/api/v1/auth/me"))["via"] == "operator"
    error(Client().get("/api/v1/auth/me"), 401, 40100)


def test_the_admin_site_shows_people_and_never_a_token_hash(admin):
    project, _ = project_with_models()
    ProjectMember.objects.create(project=project, user=admin, role="owner")
    token_of("root")
    site = Client()
    site.force_login(admin)
    token = ApiToken.objects.get()
    pages = ["/admin/auth/user/", f"/admin/auth/user/{admin.pk}/change/", "/admin/accounts/apitoken/", f"/admin/accounts/apitoken/{quote(token.pk)}/change/",  # as the admin quotes ids in its links: "_40" would read as "@"
             "/admin/accounts/projectmember/", "/admin/accounts/sharelink/", "/admin/accounts/auditevent/"]
    for page in pages:
        response = site.get(page)
        assert response.status_code == 200, page
        assert token.secret_sha256 not in response.content.decode(), page
    assert b"Root Admin" in site.get(f"/admin/auth/user/{admin.pk}/change/").content


def test_a_role_set_in_the_admin_decides_the_superuser_flags():
    user = person("kim", "user")
    Account.objects.filter(user=user).update(role="admin")
    user.refresh_from_db()
    server_role_sync(user)
    user.refresh_from_db()
    assert user.is_superuser and user.is_staff
    bare = User.objects.create_user("bare")
    server_role_sync(bare)
    assert Account.objects.get(user=bare).role == "user"
