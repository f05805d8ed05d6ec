"""The Foundation API 1.0: versions and auth are public and tell a client where the BCF API and the OAuth2 endpoints
are; current-user names the caller (every answer checked against the official schemas by conftest.py)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.bcfapi.conftest import as_bearer, tokens_for
from tests.accounts.people import token_of

pytestmark = pytest.mark.django_db


def test_versions_name_foundation_1_0_and_bcf_3_0_with_its_base_url(people):
    answer = Client().get("/foundation/versions")
    assert answer.status_code == 200 and "ETag" in answer
    versions = {(v["api_id"], v["version_id"]): v for v in answer.json()["versions"]}
    assert set(versions) == {("foundation", "1.0"), ("bcf", "3.0")}
    assert versions[("bcf", "3.0")]["api_base_url"] == "http://testserver/bcf/3.0"


def test_auth_names_the_oauth2_endpoints_and_the_one_flow(people):
    answer = Client().get("/foundation/1.0/auth").json()
    assert answer == {
        "oauth2_auth_url": "http://testserver/foundation/oauth2/authorize",
        "oauth2_token_url": "http://testserver/foundation/oauth2/token",
        "http_basic_supported": False,
        "supported_oauth2_flows": ["authorization_code_grant"],
    }


def test_public_routes_stay_open_whatever_credential_fails(people):
    assert as_bearer("bmo_wrong").get("/foundation/versions").status_code == 200


def test_current_user_for_an_oauth_token_a_personal_token_and_a_session(people, desktop_client):
    oauth = tokens_for("olga", desktop_client)
    assert as_bearer(oauth["access_token"]).get("/foundation/1.0/current-user").json() == {"id": "olga", "name": "Olga"}
    personal = token_of("rita", scope="read")
    assert as_bearer(personal["token"]).get("/foundation/1.0/current-user").json() == {"id": "rita", "name": "Rita"}
    browser = Client()
    browser.force_login(people["vic"])
    assert browser.get("/foundation/1.0/current-user").json()["id"] == "vic"


def test_current_user_without_a_credential_is_401_with_the_error_body(people):
    answer = Client().get("/foundation/1.0/current-user")
    assert answer.status_code == 401 and answer.json()["message"] and answer["WWW-Authenticate"] == 'Bearer realm="bcf"'


def test_an_etag_answers_304_when_nothing_changed(people):
    first = Client().get("/foundation/versions")
    again = Client().get("/foundation/versions", headers={"If-None-Match": first["ETag"]})
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == first["ETag"]
    assert Client().get("/foundation/versions", headers={"If-None-Match": '"other"'}).status_code == 200
