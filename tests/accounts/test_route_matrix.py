"""The role x route matrix: every route of the URL configuration, every method its access rule names, asked by every
kind of caller, against what the roles table (docs/security/roles.md) says that caller may do there.

Only the access decision is under test: the views behind the middleware are replaced by a stand-in answering 299, so
"allowed" means the request reached its view. A route the URL configuration has and the rules lack fails here.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.http import HttpResponse
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from accounts_app.models import Account, ApiToken, ProjectMember, ShareLink
from accounts_app.roles import Capability
from accounts_app.secrets import OAUTH_PREFIX, SHARE_COOKIE, SHARE_PREFIX, TOKEN_PREFIX, new_secret, sha256
from chat_app.models import ChatSession
from models_app.models import IfcModel, Project, ProjectModel
from viewer_gateway import access_rules
from viewer_gateway.access import AccessMiddleware
from viewer_gateway.access_rules import ROUTE_RULES

pytestmark = pytest.mark.django_db
OPERATOR_TOKEN = "operator-token-for-the-matrix"
REACHED_VIEW = 299
C = Capability

# what each kind of caller may do, by capability: the roles table of docs/security/roles.md, written out again
SCOPED_BY_ROLE = {
    "owner": {C.VIEW, C.DOWNLOAD, C.REVIEW, C.EDIT, C.OWN},
    "editor": {C.VIEW, C.DOWNLOAD, C.REVIEW, C.EDIT},
    "reviewer": {C.VIEW, C.DOWNLOAD, C.REVIEW},
    "viewer": {C.VIEW, C.DOWNLOAD},
}
UNSCOPED_BY_SERVER_ROLE = {
    "admin": {C.PUBLIC, C.SIGNED_IN, C.ACCOUNT, C.CREATE, C.ADMINISTER},
    "user": {C.PUBLIC, C.SIGNED_IN, C.ACCOUNT, C.CREATE},
    "guest": {C.PUBLIC, C.SIGNED_IN, C.ACCOUNT},
}


def walk(patterns, prefix=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            if entry.namespace == "admin":
                continue  # Django's admin: its own staff login (tests/gateway admin tests)
            yield from walk(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.name


def all_routes() -> list[tuple[str, str]]:
    return list(walk(get_resolver().url_patterns))


def test_every_route_has_an_access_rule_and_every_rule_a_route():
    names = {name for _, name in all_routes()}
    assert None not in names, "a route without a name cannot have an access rule"
    assert sorted(names - ROUTE_RULES.keys()) == [], "routes without an access rule (add them to viewer_gateway/access.py)"
    stale = set(ROUTE_RULES) - names - {"oidc_authentication_init", "oidc_authentication_callback", "oidc_logout"}
    assert sorted(stale) == [], "access rules naming no route"


@pytest.fixture
def world(db):
    User = get_user_model()
    project = Project.objects.create(title="Tower", kind="ifc")
    model = IfcModel.objects.create(name="tower.ifc", status="ready")
    ProjectModel.objects.create(project=project, model=model)
    session = ChatSession.objects.create(project=project)
    users = {}
    for username, server_role, project_role in [
        ("olga", "user", "owner"), ("ed", "user", "editor"), ("rita", "user", "reviewer"), ("vic", "user", "viewer"),
        ("otto", "user", None), ("gus", "guest", None), ("ada", "admin", None),
    ]:
        user = User.objects.create_user(username, password="not-used-here", is_superuser=server_role == "admin")
        Account.objects.create(user=user, role=server_role)
        if project_role:
            ProjectMember.objects.create(project=project, user=user, role=project_role)
        users[username] = user
    return {"project": project, "model": model, "session": session, "users": users}


def _token(user, *, scope="write", expires_at=None, revoked=False) -> str:
    secret = new_secret(TOKEN_PREFIX)
    ApiToken.objects.create(user=user, name="matrix", scope=scope, secret_sha256=sha256(secret), expires_at=expires_at,
                            revoked_at=timezone.now() if revoked else None)
    return secret


def _oauth_token(user, *, scope="read write", expires_in=timedelta(hours=1)) -> str:
    """An access token of a BCF API client (django-oauth-toolkit), as its token endpoint stores one."""
    from oauth2_provider.models import get_access_token_model, set_token_value

    secret = new_secret(OAUTH_PREFIX)
    token = get_access_token_model()(user=user, scope=scope, expires=timezone.now() + expires_in)
    set_token_value(token, secret)
    token.save()
    return secret


def _share_link(project) -> str:
    secret = new_secret(SHARE_PREFIX)
    ShareLink.objects.create(project=project, secret_sha256=sha256(secret), expires_at=timezone.now() + timedelta(days=1))
    return secret


def callers(world) -> dict[str, dict]:
    """name -> how the caller authenticates and what it expects: scoped (capabilities in the project), unscoped
    (capabilities outside any scope), or a fixed refusal code for everything but public routes."""
    users = world["users"]
    in_days = timezone.now() + timedelta(days=3)
    table = {
        "anonymous": {"auth": {}, "refused": 40100},
        "operator": {"auth": {"HTTP_AUTHORIZATION": f"Bearer {OPERATOR_TOKEN}"}, "scoped": SCOPED_BY_ROLE["owner"], "unscoped": UNSCOPED_BY_SERVER_ROLE["admin"]},
        "admin": {"session": users["ada"], "scoped": SCOPED_BY_ROLE["owner"], "unscoped": UNSCOPED_BY_SERVER_ROLE["admin"]},
        "outsider": {"session": users["otto"], "scoped": set(), "unscoped": UNSCOPED_BY_SERVER_ROLE["user"]},
        "guest": {"session": users["gus"], "scoped": set(), "unscoped": UNSCOPED_BY_SERVER_ROLE["guest"]},
        "revoked token": {"auth": {"HTTP_AUTHORIZATION": f"Bearer {_token(users['olga'], revoked=True)}"}, "refused": 40100},
        "expired token": {"auth": {"HTTP_AUTHORIZATION": f"Bearer {_token(users['olga'], expires_at=timezone.now() - timedelta(seconds=1))}"}, "refused": 40100},
        "wrong token": {"auth": {"HTTP_AUTHORIZATION": f"Bearer {TOKEN_PREFIX}not-a-token"}, "refused": 40100},
        "owner's read-only token": {"auth": {"HTTP_AUTHORIZATION": f"Bearer {_token(users['olga'], scope='read', expires_at=in_days)}"},
                                    "scoped": {C.VIEW, C.DOWNLOAD}, "unscoped": {C.PUBLIC, C.SIGNED_IN}},
        "share link": {"cookie": _share_link(world["project"]), "scoped": {C.VIEW}, "unscoped": {C.PUBLIC, C.SIGNED_IN}},
        # BCF API clients' OAuth2 access tokens: the user's roles; without the write scope read-only
        "reviewer's OAuth token": {"auth": {"HTTP_AUTHORIZATION": f"Bearer {_oauth_token(users['rita'])}"}, "bcf_only": True,
                                   "scoped": SCOPED_BY_ROLE["reviewer"], "unscoped": UNSCOPED_BY_SERVER_ROLE["user"]},
        "owner's read OAuth token": {"auth": {"HTTP_AUTHORIZATION": f"Bearer {_oauth_token(users['olga'], scope='read')}"}, "bcf_only": True,
                                     "scoped": {C.VIEW, C.DOWNLOAD}, "unscoped": {C.PUBLIC, C.SIGNED_IN}},
        "expired OAuth token": {"auth": {"HTTP_AUTHORIZATION": f"Bearer {_oauth_token(users['olga'], expires_in=timedelta(seconds=-1))}"}, "refused": 40100},
        "wrong OAuth token": {"auth": {"HTTP_AUTHORIZATION": f"Bearer {OAUTH_PREFIX}not-a-token"}, "refused": 40100},
    }
    for username, role in [("olga", "owner"), ("ed", "editor"), ("rita", "reviewer"), ("vic", "viewer")]:
        table[role] = {"session": users[username], "scoped": SCOPED_BY_ROLE[role], "unscoped": UNSCOPED_BY_SERVER_ROLE["user"]}
    table["editor's token"] = {"auth": {"HTTP_AUTHORIZATION": f"Bearer {_token(users['ed'], expires_at=in_days)}"},
                               "scoped": SCOPED_BY_ROLE["editor"], "unscoped": UNSCOPED_BY_SERVER_ROLE["user"]}
    return table


def concrete_path(route: str, world) -> str:
    values = {
        "model_id": world["model"].id, "item_id": world["model"].id, "project_id": world["project"].id,
        "cid": world["session"].id, "version": "v1", "username": "rita",
    }
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: values.get(m.group(1), "x1"), route)


def expected(caller: dict, capability: Capability, url_name: str) -> int:
    if capability == C.PUBLIC:  # a credential that fails is not asked about where none is needed
        return REACHED_VIEW
    if "refused" in caller:
        return caller["refused"]
    if caller.get("bcf_only") and not url_name.startswith("bcf-"):  # a BCF client's token acts on the BCF API only
        return 40300
    if capability in SCOPED_BY_ROLE["owner"]:
        if capability in caller["scoped"]:
            return REACHED_VIEW
        return 40300 if caller["scoped"] else 40400  # seen but not allowed, or not seen at all
    return REACHED_VIEW if capability in caller["unscoped"] else 40300


@pytest.fixture
def gate_only(monkeypatch):
    """The access middleware in front of a stand-in view: what passes the gate answers 299."""
    original_init = AccessMiddleware.__init__

    def init(self, get_response):
        original_init(self, lambda request: HttpResponse("reached the view", status=REACHED_VIEW))

    monkeypatch.setattr(AccessMiddleware, "__init__", init)


@pytest.mark.parametrize("operator_token", [OPERATOR_TOKEN, ""], ids=["with the operator's token", "accounts only"])
def test_every_route_for_every_caller(world, gate_only, viewer_config, operator_token):
    viewer_config(apiToken=operator_token)
    mismatches = []
    asked = 0
    for name, caller in callers(world).items():
        if name == "operator" and not operator_token:
            caller = {"auth": caller["auth"], "refused": 40100}  # no such token: a wrong one
        client = Client()
        if "session" in caller:
            client.force_login(caller["session"])
        if "cookie" in caller:
            client.cookies[SHARE_COOKIE] = caller["cookie"]
        for route, url_name in all_routes():
            path = concrete_path(route, world)
            for method, capability in ROUTE_RULES[url_name].items():
                response = client.generic(method, path, **caller.get("auth", {}))
                got = response.status_code if response.status_code == REACHED_VIEW else response.json()["code"]
                want = expected(caller, capability, url_name)
                asked += 1
                if got != want:
                    mismatches.append(f"{name}: {method} {path} ({url_name}, {capability}) -> {got}, expected {want}")
    assert asked > 1000
    assert mismatches == []


def test_a_model_outside_any_project_is_its_uploaders(world, gate_only):
    users = world["users"]
    own = IfcModel.objects.create(name="mine.ifc", status="ready", uploaded_by=users["otto"])
    otto, rita = Client(), Client()
    otto.force_login(users["otto"])
    rita.force_login(users["rita"])
    assert otto.delete(f"/api/v1/models/{own.id}").status_code == REACHED_VIEW
    assert otto.get(f"/v1/models/{own.id}/model.xkt").status_code == REACHED_VIEW
    assert rita.get(f"/v1/models/{own.id}/model.xkt").json()["code"] == 40400
    assert rita.get(f"/api/v1/models/{world['model'].id}/script").status_code == REACHED_VIEW


def test_unknown_ids_are_not_found_for_everyone_but_the_open_mode_answers_as_before(world, gate_only):
    rita = Client()
    rita.force_login(world["users"]["rita"])
    assert rita.get("/api/v1/models/m_0000000000000000").json()["code"] == 40400
    assert rita.get("/api/v1/chat/sessions/nope/events").json()["code"] == 40400


def test_a_route_without_a_rule_is_refused(world, monkeypatch):
    monkeypatch.delitem(access_rules.ROUTE_RULES, "model-detail")
    admin = Client()
    admin.force_login(world["users"]["ada"])
    response = admin.get(f"/api/v1/models/{world['model'].id}")
    assert response.status_code == 500 and "no access rule" in response.json()["message"]


def _view_methods(callback) -> set[str] | None:
    view = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
    if view is None:
        return None  # a function view (the event stream) answers what it answers itself
    names = getattr(callback, "view_initkwargs", {}).get("http_method_names", view.http_method_names)
    return {name.upper() for name in names if hasattr(view, name) and name not in ("options", "head")}


def test_each_rule_names_exactly_the_methods_its_view_answers():
    """A rule for a method no view answers is noise that hides a forgotten one; a method a view answers without a
    rule is refused (fail closed) and must be a decision, not an accident."""
    mismatched = []
    for entry_route, name, callback in _routes_with_views(get_resolver().url_patterns):
        methods = _view_methods(callback)
        if methods is not None and methods != set(ROUTE_RULES[name]):
            mismatched.append(f"{name} ({entry_route}): view {sorted(methods)}, rule {sorted(ROUTE_RULES[name])}")
    assert mismatched == []


def _routes_with_views(patterns, prefix=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            if entry.namespace != "admin":
                yield from _routes_with_views(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.name, entry.callback
