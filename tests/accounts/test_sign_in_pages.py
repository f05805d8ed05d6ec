"""The sign-in page, signing out, the password change and opening a share link, through Django's test client and
the whole middleware chain (edge checks, access, CSRF, django-axes)."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from accounts_app.models import ApiToken, AuditEvent, ShareLink
from accounts_app.secrets import SHARE_COOKIE, SHARE_PREFIX, TOKEN_PREFIX, new_secret, sha256
from models_app.models import Project

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery 1"


@pytest.fixture
def alice():
    return get_user_model().objects.create_user("alice", password=PASSWORD)


@pytest.fixture
def browser():
    """A client that sends the CSRF token only when told to, as a browser page would."""
    return Client(enforce_csrf_checks=True)


def sign_in(client, username="alice", password=PASSWORD, next_url=None):
    client.get("/sign-in")
    form = {"username": username, "password": password, "csrfmiddlewaretoken": client.cookies["csrftoken"].value}
    if next_url is not None:
        form["next"] = next_url
    return client.post("/sign-in", form)


def signed_in_user_id(client):
    return client.session.get("_auth_user_id")


def actions():
    return list(AuditEvent.objects.order_by("id").values_list("action", "username"))


def test_sign_in_page_is_a_csrf_protected_form(alice, browser):
    page = browser.get("/sign-in")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="csrfmiddlewaretoken"' in html and 'action="/sign-in"' in html
    assert "<script" not in html  # the page's CSP forbids inline script
    assert "Content-Security-Policy" in page.headers
    refused = browser.post("/sign-in", {"username": "alice", "password": PASSWORD})  # no CSRF token
    assert refused.status_code == 403
    assert signed_in_user_id(browser) is None


def test_sign_in_then_the_api_answers_the_session(alice, browser):
    assert browser.get("/api/v1/models").status_code == 401
    answer = sign_in(browser)
    assert answer.status_code == 302 and answer.headers["Location"] == "/"
    assert signed_in_user_id(browser) == str(alice.pk)
    assert browser.get("/api/v1/models").status_code == 200
    assert ("sign-in", "alice") in actions()


def test_a_wrong_password_is_refused_and_recorded(alice, browser):
    answer = sign_in(browser, password="wrong")
    assert answer.status_code == 400
    assert "The user name or the password is wrong." in answer.content.decode()
    assert signed_in_user_id(browser) is None
    assert actions() == [("sign-in.failed", "alice")]


def test_five_failures_lock_the_name_out_even_with_the_right_password(alice, browser):
    for _ in range(4):
        assert sign_in(browser, password="guess").status_code == 400
    fifth = sign_in(browser, password="guess")
    assert fifth.status_code == 429
    assert "Too many failed attempts: try again in 15 minutes." in fifth.content.decode()
    right = sign_in(browser)
    assert right.status_code == 429
    assert "try again in 15 minutes" in right.content.decode()
    assert signed_in_user_id(browser) is None
    other = Client(enforce_csrf_checks=True)
    get_user_model().objects.create_user("bob", password=PASSWORD)
    assert sign_in(other, username="bob").status_code == 302  # the lockout is of alice's name, not of the page


@pytest.mark.parametrize(("asked", "redirected"), [
    ("/#model=m_0123456789abcdef", "/#model=m_0123456789abcdef"),
    ("/api/v1/models", "/api/v1/models"),
    ("https://evil.example/steal", "/"),
    ("//evil.example/steal", "/"),
    ("javascript:alert(1)", "/"),
])
def test_sign_in_goes_only_to_a_next_of_this_gateway(alice, browser, asked, redirected):
    assert sign_in(browser, next_url=asked).headers["Location"] == redirected


def test_the_page_carries_a_safe_next_into_its_form(alice, browser):
    assert 'name="next" value="/#model=m_0123456789abcdef"' in browser.get("/sign-in", {"next": "/#model=m_0123456789abcdef"}).content.decode()
    assert 'name="next" value="/"' in browser.get("/sign-in", {"next": "https://evil.example/"}).content.decode()


def test_sign_in_page_without_accounts_says_so_with_404(browser):
    page = browser.get("/sign-in")
    assert page.status_code == 404
    assert "no accounts" in page.content.decode()


class _ViewerWith:
    """The gateway configuration with some keys added or replaced (keys another part of the gateway may not have yet)."""

    def __init__(self, base, **extra):
        self._base, self._extra = base, extra

    def __getattr__(self, name):
        return self._extra[name] if name in self._extra else getattr(self._base, name)


def test_single_sign_on_link_shows_when_an_issuer_is_configured(alice, browser, settings):
    assert "Sign in with" not in browser.get("/sign-in").content.decode()
    settings.VIEWER = _ViewerWith(settings.VIEWER, oidcIssuer="https://id.example", oidcName="Example ID")
    html = browser.get("/sign-in").content.decode()
    assert "Sign in with Example ID" in html and 'href="/oidc/authenticate/?next=/"' in html
    settings.VIEWER = _ViewerWith(settings.VIEWER, oidcName="")
    assert "Sign in with single sign-on" in browser.get("/sign-in").content.decode()


def test_sign_out_ends_the_session_and_is_recorded(alice, browser):
    sign_in(browser)
    refused = browser.post("/sign-out")  # no CSRF token: a cross-site page cannot sign anyone out
    assert refused.status_code == 403 and signed_in_user_id(browser) is not None
    answer = browser.post("/sign-out", HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value)
    assert answer.status_code == 302 and answer.headers["Location"] == "/sign-in"
    assert signed_in_user_id(browser) is None
    assert browser.get("/api/v1/models").status_code == 401
    assert [action for action, _ in actions()] == ["sign-in", "sign-out"]


def change_password(client, old, new, *, csrf=True):
    headers = {"HTTP_X_CSRFTOKEN": client.cookies["csrftoken"].value} if csrf else {}
    return client.post("/api/v1/auth/password", {"oldPassword": old, "newPassword": new}, content_type="application/json", **headers)


def test_a_session_post_to_the_api_without_the_csrf_header_is_refused(alice, browser):
    sign_in(browser)
    refused = change_password(browser, PASSWORD, "a new long password 2", csrf=False)
    assert refused.status_code == 403
    assert refused.json()["code"] == 40300 and "CSRF" in refused.json()["message"]
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


def test_password_change_keeps_the_session_and_takes_the_new_password(alice, browser):
    sign_in(browser)
    answer = change_password(browser, PASSWORD, "a new long password 2")
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"code": 0, "message": "ok", "data": {"changed": True}}
    assert browser.get("/api/v1/models").status_code == 200  # update_session_auth_hash: still signed in
    alice.refresh_from_db()
    assert alice.check_password("a new long password 2")
    assert ("password.change", "alice") in actions()
    fresh = Client(enforce_csrf_checks=True)
    assert sign_in(fresh, password=PASSWORD).status_code == 400
    assert sign_in(fresh, password="a new long password 2").status_code == 302


def test_password_change_names_the_field_that_is_wrong(alice, browser, settings):
    settings.AUTH_PASSWORD_VALIDATORS = [
        {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    ]
    sign_in(browser)
    wrong_old = change_password(browser, "not it", "a new long password 2").json()
    assert wrong_old["code"] == 40001 and wrong_old["message"].startswith("oldPassword:")
    short = change_password(browser, PASSWORD, "short").json()
    assert short["code"] == 40001 and short["message"].startswith("newPassword:") and "12 characters" in short["message"]
    missing = change_password(browser, PASSWORD, "").json()
    assert missing["code"] == 40001 and missing["message"].startswith("newPassword:")
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


def test_a_personal_token_cannot_change_the_password(alice, client):
    secret = new_secret(TOKEN_PREFIX)
    ApiToken.objects.create(user=alice, name="ci", scope=ApiToken.Scope.WRITE, secret_sha256=sha256(secret))
    answer = client.post("/api/v1/auth/password", {"oldPassword": PASSWORD, "newPassword": "a new long password 2"},
                         content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert answer.status_code == 403 and answer.json()["code"] == 40300
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


def make_link(project, *, expires_in=timedelta(days=2), model_ids=(), revoked=False):
    secret = new_secret(SHARE_PREFIX)
    ShareLink.objects.create(project=project, model_ids=list(model_ids), secret_sha256=sha256(secret),
                             expires_at=timezone.now() + expires_in, revoked_at=timezone.now() if revoked else None)
    return secret


@pytest.fixture
def project(alice):
    return Project.objects.create(title="Haus", kind="ifc")


def test_opening_a_share_link_sets_its_cookie_until_it_expires(project, client):
    secret = make_link(project, expires_in=timedelta(hours=3))
    answer = client.get(f"/s/{secret}")
    assert answer.status_code == 302 and answer.headers["Location"] == f"/#project={project.id}"
    cookie = answer.cookies[SHARE_COOKIE]
    assert cookie.value == secret
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and not cookie["secure"]
    assert 3 * 3600 - 60 <= int(cookie["max-age"]) <= 3 * 3600
    assert client.get(f"/api/v1/projects/{project.id}/members").status_code != 401  # the cookie is a credential now


def test_a_share_link_of_models_opens_the_first_and_over_https_is_secure(project, client):
    secret = make_link(project, model_ids=["m_0123456789abcdef", "m_fedcba9876543210"])
    answer = client.get(f"/s/{secret}", secure=True)
    assert answer.headers["Location"] == "/#model=m_0123456789abcdef"
    assert answer.cookies[SHARE_COOKIE]["secure"]


@pytest.mark.parametrize("state", ["expired", "revoked", "unknown"])
def test_a_share_link_that_does_not_open_says_so_with_404(project, client, state):
    secret = {
        "expired": lambda: make_link(project, expires_in=timedelta(seconds=-1)),
        "revoked": lambda: make_link(project, revoked=True),
        "unknown": lambda: new_secret(SHARE_PREFIX),
    }[state]()
    answer = client.get(f"/s/{secret}")
    assert answer.status_code == 404
    assert answer.headers["Content-Type"].startswith("text/html")
    assert "This share link is not valid" in answer.content.decode()
    assert SHARE_COOKIE not in answer.cookies


def test_with_the_operators_token_set_the_pages_need_no_token(alice, browser, viewer_config, project):
    viewer_config(apiToken="operator-secret")
    assert browser.get("/sign-in").status_code == 200
    assert sign_in(browser).status_code == 302
    assert browser.get("/api/v1/models").status_code == 200  # the session, not the operator's token
    assert browser.post("/sign-out", HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value).status_code == 302
    assert browser.get(f"/s/{make_link(project)}").status_code == 302


def test_the_sign_in_page_says_when_single_sign_on_failed(client):
    from accounts_app.models import Account
    from django.contrib.auth import get_user_model

    Account.objects.create(user=get_user_model().objects.create_user("someone", password="x-unused-1234"), role="user")
    assert b"Single sign-on failed" in client.get("/sign-in?sso=failed").content
    assert b"Single sign-on failed" not in client.get("/sign-in").content
