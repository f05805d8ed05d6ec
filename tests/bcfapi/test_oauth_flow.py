"""OAuth2 sign-in of BCF API clients (django-oauth-toolkit behind this service's sign-in page and consent page): the
authorization-code flow as IfcOpenShell's bcf-client runs it (confidential client, HTTP Basic, no PKCE), a public
client with PKCE, refresh with rotation, revoke, and what a bad, expired or revoked token is answered."""

from __future__ import annotations

import base64
from datetime import timedelta
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

from accounts_app.identity import identify, refreshed
from accounts_app.models import AuditEvent
from accounts_app.secrets import OAUTH_PREFIX, sha256
from tests.bcfapi.conftest import (
    REDIRECT_URI,
    as_bearer,
    authorize_url,
    code_from,
    consent,
    exchange,
    pkce_pair,
    register_client,
    signed_in_browser,
    tokens_for,
)

pytestmark = pytest.mark.django_db
AccessToken = get_access_token_model()
RefreshToken = get_refresh_token_model()


def token_request(form: dict, basic: str = "", endpoint: str = "token"):
    return Client().post(f"/foundation/oauth2/{endpoint}", urlencode(form), content_type="application/x-www-form-urlencoded",
                         headers={"Authorization": basic} if basic else {})


def test_a_signed_out_browser_signs_in_consents_once_and_the_client_gets_bmo_tokens(people, desktop_client):
    browser = Client(enforce_csrf_checks=True)
    first = browser.get(authorize_url(desktop_client))
    assert first.status_code == 302 and first["Location"].startswith("/sign-in?next=")
    sign_in_page = browser.get(first["Location"])
    assert sign_in_page.status_code == 200
    next_url = sign_in_page.context["next"]
    assert next_url.startswith("/foundation/oauth2/authorize?") and desktop_client.client_id in next_url
    signed = browser.post("/sign-in", {"username": "rita", "password": "correct horse battery staple", "next": next_url,
                                       "csrfmiddlewaretoken": browser.cookies["csrftoken"].value})
    assert signed.status_code == 302 and signed["Location"] == next_url

    page = browser.get(next_url)
    body = page.content.decode()
    assert page.status_code == 200 and "BCF desktop" in body and "registered by the operator" in body and "rita" in body
    assert "form-action 'self' http://localhost:8080" in page["Content-Security-Policy"] and "script-src" not in page["Content-Security-Policy"]
    # without the CSRF token the answer is refused, like any form of a session
    assert browser.post("/foundation/oauth2/authorize", {"allow": "Authorize"}).status_code == 403

    code = code_from(consent(browser, desktop_client))
    answer = exchange(desktop_client, code)
    assert answer.status_code == 200, answer.content
    tokens = answer.json()
    assert tokens["access_token"].startswith(OAUTH_PREFIX) and tokens["refresh_token"].startswith(OAUTH_PREFIX)
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600 and set(tokens["scope"].split()) == {"read", "write"}
    # kept only as a checksum (RFC 9700 token storage)
    row = AccessToken.objects.get(token_checksum=sha256(tokens["access_token"]))
    assert row.token == "" and row.user.username == "rita"
    me = as_bearer(tokens["access_token"]).get("/foundation/1.0/current-user")
    assert me.status_code == 200 and me.json() == {"id": "rita", "name": "Rita"}
    assert AuditEvent.objects.filter(action="oauth.use", username="rita").count() == 1
    # the code is single-use
    assert exchange(desktop_client, code).status_code == 400

    # consent is asked once: the next sign-in of the client goes straight back with a code
    again = browser.get(authorize_url(desktop_client, state="st-2"))
    assert again.status_code == 302 and parse_qs(urlsplit(again["Location"]).query)["state"] == ["st-2"]


def test_denying_sends_the_client_access_denied_and_no_token(people, desktop_client):
    denied = consent(signed_in_browser("rita"), desktop_client, allow=False)
    assert denied.status_code == 302
    query = parse_qs(urlsplit(denied["Location"]).query)
    assert query["error"] == ["access_denied"] and query["state"] == ["st-1"] and "code" not in query
    assert not AccessToken.objects.exists()


def test_a_confidential_client_needs_its_secret(people, desktop_client):
    code = code_from(consent(signed_in_browser("rita"), desktop_client))
    wrong = token_request({"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI},
                          basic="Basic " + base64.b64encode(f"{desktop_client.client_id}:nope".encode()).decode())
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    assert exchange(desktop_client, code).status_code == 200


def _redirect_query(response) -> dict:
    assert response.status_code == 302 and response["Location"].startswith(REDIRECT_URI), response.content[:300]
    return parse_qs(urlsplit(response["Location"]).query)


def test_a_public_client_must_use_pkce_with_s256(people):
    public = register_client("Browser plugin", confidential=False)
    browser = signed_in_browser("rita")
    without = _redirect_query(browser.get(authorize_url(public)))
    assert without["error"] == ["invalid_request"] and "code" not in without

    verifier, challenge = pkce_pair()
    code = code_from(consent(browser, public, code_challenge=challenge, code_challenge_method="S256"))
    assert exchange(public, code, code_verifier="not-the-verifier-" + "x" * 40).status_code == 400
    code = code_from(consent(browser, public, code_challenge=challenge, code_challenge_method="S256", state="st-3"))
    answer = exchange(public, code, code_verifier=verifier)
    assert answer.status_code == 200 and answer.json()["access_token"].startswith(OAUTH_PREFIX)
    # "plain" is refused (RFC 9700): the consent's answer carries an error, not a code
    plain = _redirect_query(consent(browser, public, code_challenge=verifier, code_challenge_method="plain", state="st-4"))
    assert plain["error"] == ["invalid_request"] and "code" not in plain


def test_a_redirect_url_other_than_the_registered_one_is_refused_on_the_page(people, desktop_client):
    page = signed_in_browser("rita").get(authorize_url(desktop_client).replace("callback", "elsewhere"))
    assert page.status_code == 400 and "consent-error" in page.content.decode()


def test_refresh_rotates_and_a_used_refresh_token_is_dead(people, desktop_client):
    tokens = tokens_for("rita", desktop_client)
    refreshed = token_request({"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}, basic=desktop_client.basic)
    assert refreshed.status_code == 200, refreshed.content
    new = refreshed.json()
    assert new["refresh_token"] != tokens["refresh_token"] and new["access_token"].startswith(OAUTH_PREFIX)
    assert as_bearer(new["access_token"]).get("/foundation/1.0/current-user").status_code == 200
    assert as_bearer(tokens["access_token"]).get("/foundation/1.0/current-user").status_code == 401  # the old pair ended
    reused = token_request({"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}, basic=desktop_client.basic)
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    # a refresh token used twice is a stolen one: the whole chain ends (reuse protection)
    assert as_bearer(new["access_token"]).get("/foundation/1.0/current-user").status_code == 401
    assert token_request({"grant_type": "refresh_token", "refresh_token": new["refresh_token"]}, basic=desktop_client.basic).status_code == 400


def test_revoke_ends_the_token_and_the_api_answers_401_with_a_bearer_challenge(people, desktop_client):
    tokens = tokens_for("rita", desktop_client)
    revoked = token_request({"token": tokens["access_token"], "token_type_hint": "access_token"}, basic=desktop_client.basic, endpoint="revoke")
    assert revoked.status_code == 200
    answer = as_bearer(tokens["access_token"]).get("/bcf/3.0/projects")
    assert answer.status_code == 401 and answer.json()["message"] == "invalid bearer token"
    assert answer["WWW-Authenticate"] == 'Bearer realm="bcf", error="invalid_token"'


def test_bad_expired_and_missing_tokens_get_401_and_a_user_without_the_role_403(people, desktop_client):
    tokens = tokens_for("vic", desktop_client)
    project = people["project"].id
    bad = as_bearer(OAUTH_PREFIX + "not-a-token").get("/bcf/3.0/projects")
    assert bad.status_code == 401 and bad["WWW-Authenticate"].endswith('error="invalid_token"')
    none = Client().get(f"/bcf/3.0/projects/{project}")
    assert none.status_code == 401 and none["WWW-Authenticate"] == 'Bearer realm="bcf"'
    viewer = as_bearer(tokens["access_token"])
    assert viewer.get(f"/bcf/3.0/projects/{project}").status_code == 200
    refused = viewer.put(f"/bcf/3.0/projects/{project}", {"name": "Mine now"}, content_type="application/json")
    assert refused.status_code == 403 and "viewer" in refused.json()["message"]
    AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
    expired = viewer.get(f"/bcf/3.0/projects/{project}")
    assert expired.status_code == 401 and expired.json()["message"] == "this token has expired"


def test_a_read_scope_token_reads_only(people, desktop_client):
    browser = signed_in_browser("olga")
    answer = exchange(desktop_client, code_from(consent(browser, desktop_client, scope="read")))
    assert answer.json()["scope"] == "read"
    reader = as_bearer(answer.json()["access_token"])
    project = people["project"].id
    assert reader.get(f"/bcf/3.0/projects/{project}").json()["authorization"]["project_actions"] == []
    refused = reader.put(f"/bcf/3.0/projects/{project}", {"name": "Renamed"}, content_type="application/json")
    assert refused.status_code == 403 and "read-only" in refused.json()["message"]


def test_a_disabled_account_loses_its_tokens(people, desktop_client):
    tokens = tokens_for("rita", desktop_client)
    people["rita"].is_active = False
    people["rita"].save()
    assert as_bearer(tokens["access_token"]).get("/bcf/3.0/projects").status_code == 401


def test_only_the_authorization_code_grant_is_served(people, desktop_client):
    password = token_request({"grant_type": "password", "username": "rita", "password": "correct horse battery staple"}, basic=desktop_client.basic)
    assert password.status_code in (400, 401) and "access_token" not in password.json()
    implicit = signed_in_browser("rita").get(authorize_url(desktop_client).replace("response_type=code", "response_type=token"))
    assert "access_token=" not in implicit.get("Location", "")


def test_an_open_event_stream_of_an_oauth_token_ends_with_the_token(people, desktop_client):
    tokens = tokens_for("rita", desktop_client)
    principal = identify(None, address="127.0.0.1", authorization=f"Bearer {tokens['access_token']}")
    assert principal.via == "oauth" and principal.user_id == people["rita"].pk and not principal.read_only
    assert refreshed(principal, None) == principal
    token_request({"token": tokens["access_token"]}, basic=desktop_client.basic, endpoint="revoke")
    assert refreshed(principal, None) is None


def test_the_operator_registers_clients_in_the_admin(people):
    admin = Client()
    people["olga"].is_staff = people["olga"].is_superuser = True
    people["olga"].save()
    admin.force_login(people["olga"])
    page = admin.get("/admin/oauth2_provider/application/add/")
    assert page.status_code == 200 and "client_secret" in page.content.decode()
