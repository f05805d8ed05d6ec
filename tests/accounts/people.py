"""Accounts for the accounts API tests: people with a server role, projects, tokens made through the API."""

from __future__ import annotations

import json
from functools import cache

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.test import Client

from accounts_app.models import Account
from models_app.models import IfcModel, Project, ProjectModel

PASSWORD = "correct horse battery staple"


@cache
def password_hash() -> str:
    """PASSWORD hashed once per test run (a hash takes a good part of a second by design)."""
    return make_password(PASSWORD)


def person(username: str, role: str = "user", *, display_name: str = ""):
    """An account as the operator would make it: Django's create_user and the Account row with its server role."""
    is_admin = role == "admin"
    user = get_user_model().objects.create_user(username, is_superuser=is_admin, is_staff=is_admin)
    user.password = password_hash()
    user.save(update_fields=["password"])
    Account.objects.create(user=user, role=role, display_name=display_name)
    return user


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def bearer(token: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {token}"})


def token_of(username: str, scope: str = "write", **fields) -> dict:
    """A personal token made through the API with the account's password; the answer's data ({tokenId, token, ...})."""
    response = Client().post("/api/v1/auth/tokens", {"name": f"{scope} token", "scope": scope, "username": username, "password": PASSWORD, **fields},
                             content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()["data"]


def project_with_models(title: str = "Tower", models: int = 0) -> tuple[Project, list[IfcModel]]:
    project = Project.objects.create(title=title, kind=Project.Kind.IFC)
    records = [IfcModel.objects.create(name=f"m{index}.ifc", status="ready") for index in range(models)]
    for record in records:
        ProjectModel.objects.create(project=project, model=record)
    return project, records


def post(client: Client, path: str, body, method: str = "post"):
    """A JSON request; a str or bytes body is sent as it is (malformed on purpose)."""
    return getattr(client, method)(path, body if isinstance(body, (str, bytes)) else json.dumps(body), content_type="application/json")


def error(response, status: int, code: int) -> str:
    """The message of an error envelope with this HTTP status and code."""
    body = response.json()
    assert (response.status_code, body["code"]) == (status, code), body
    return body["message"]
