"""The BCF API tests: people with project roles, a project with an IFC model, an OAuth2 client registered as the
operator would, access tokens got through the real authorization-code flow, and a schema check on every answer.

Every response a test here gets from a /bcf/ or /foundation/ path through Django's test client is validated against
the official schemas (schema_check.check_answer): a route answering a shape the schemas do not allow fails the test
that called it, whatever that test asserts itself.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import secrets
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client
from django.urls import Resolver404, resolve
from oauth2_provider.models import get_application_model

from accounts_app.models import ProjectMember
from tests.accounts.people import PASSWORD, person, project_with_models
from tests.bcfapi.schema_check import check_answer

REDIRECT_URI = "http://localhost:8080/callback"
CHECKED_PREFIXES = ("/bcf/", "/foundation/")


@pytest.fixture(autouse=True)
def every_answer_checked(monkeypatch):
    """Runs schema_check.check_answer on every BCF/Foundation answer the tests' clients get."""
    original = Client.request

    def request(self, **environ):
        response = original(self, **environ)
        path = environ.get("PATH_INFO", "")
        if path.startswith(CHECKED_PREFIXES):
            try:
                name = resolve(path).url_name
            except Resolver404:
                name = None
            if name is not None:
                check_answer(name, environ["REQUEST_METHOD"], path, response)
        return response

    monkeypatch.setattr(Client, "request", request)


@pytest.fixture
def people(db):
    """A project "Tower" with an IFC model, and its people: olga owns it, rita reviews, vic views; otto is outside."""
    project, models = project_with_models("Tower", models=1)
    users = {}
    for username, role in [("olga", "owner"), ("rita", "reviewer"), ("vic", "viewer"), ("otto", None)]:
        users[username] = person(username, display_name=username.title())
        if role:
            ProjectMember.objects.create(project=project, user=users[username], role=role)
    return {"project": project, "model": models[0], **users}


@dataclass
class RegisteredClient:
    client_id: str
    secret: str  # shown once at creation (DOT keeps a hash)
    application: object

    @property
    def basic(self) -> str:
        return "Basic " + base64.b64encode(f"{self.client_id}:{self.secret}".encode()).decode()


def register_client(name: str = "BCF desktop", *, confidential: bool = True, redirect_uri: str = REDIRECT_URI) -> RegisteredClient:
    """An OAuth2 client as the operator registers one (what `manage.py createapplication` does)."""
    Application = get_application_model()
    secret = secrets.token_urlsafe(32)
    application = Application.objects.create(
        name=name, redirect_uris=redirect_uri, algorithm="",
        client_type=Application.CLIENT_CONFIDENTIAL if confidential else Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, client_secret=secret if confidential else "",
    )
    return RegisteredClient(application.client_id, secret if confidential else "", application)


@pytest.fixture
def desktop_client(db) -> RegisteredClient:
    return register_client()


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def authorize_url(client: RegisteredClient, state: str = "st-1", **extra) -> str:
    query = {"client_id": client.client_id, "response_type": "code", "state": state, "redirect_uri": REDIRECT_URI, **extra}
    return "/foundation/oauth2/authorize?" + urlencode(query)


def csrf_of(browser: Client) -> str:
    return browser.cookies["csrftoken"].value


def consent(browser: Client, client: RegisteredClient, *, allow: bool = True, **extra):
    """A signed-in browser opens the consent page and answers it; the redirect back to the client."""
    page = browser.get(authorize_url(client, **extra))
    if page.status_code == 302:
        return page  # approved before: straight back to the client
    assert page.status_code == 200, page.content[:500]
    form = dict(_hidden_fields(page.content.decode()))
    if allow:
        form["allow"] = "Authorize"
    return browser.post("/foundation/oauth2/authorize", {**form, "csrfmiddlewaretoken": csrf_of(browser)})


def _hidden_fields(page: str):
    """The hidden inputs of the consent form (what a browser posts back)."""
    for tag in re.findall(r'<input[^>]*type="hidden"[^>]*>', page):
        name = re.search(r'name="([^"]*)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name:
            yield name.group(1), html.unescape(value.group(1)) if value else ""


def signed_in_browser(username: str) -> Client:
    """A browser that signed in on the sign-in page (CSRF enforced like a real one)."""
    browser = Client(enforce_csrf_checks=True)
    browser.get("/sign-in")
    response = browser.post("/sign-in", {"username": username, "password": PASSWORD, "next": "/", "csrfmiddlewaretoken": csrf_of(browser)})
    assert response.status_code == 302, response.content[:300]
    return browser


def code_from(redirect) -> str:
    assert redirect.status_code == 302, redirect.content[:300]
    location = redirect["Location"]
    assert location.startswith(REDIRECT_URI), location
    query = parse_qs(urlsplit(location).query)
    assert "code" in query, query
    return query["code"][0]


def exchange(client: RegisteredClient, code: str, **extra):
    """The client's token request as IfcOpenShell's bcf-client sends it (form body, HTTP Basic client_id:secret)."""
    headers = {"Authorization": client.basic} if client.secret else {}
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI, **extra}
    if not client.secret:
        form["client_id"] = client.client_id
    return Client().post("/foundation/oauth2/token", urlencode(form), content_type="application/x-www-form-urlencoded", headers=headers)


def tokens_for(username: str, client: RegisteredClient) -> dict:
    """An access and refresh token for the user, through sign-in, consent and the token request."""
    answer = exchange(client, code_from(consent(signed_in_browser(username), client)))
    assert answer.status_code == 200, answer.content
    return answer.json()


def as_bearer(token: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {token}"})
